import { listDeadLetters, type DeadLetter } from "../../src/admin/list-dead-letters.js";
import type { DeliveryQueues } from "../../src/queue/delivery-queues.js";

/** Every page of `listDeadLetters` as one list (tests hold few dead letters). */
export async function collectDeadLetters(queues: DeliveryQueues): Promise<DeadLetter[]> {
  const letters: DeadLetter[] = [];
  for await (const page of listDeadLetters(queues)) letters.push(...page);
  return letters;
}
