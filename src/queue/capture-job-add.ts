import { Job, SpanKind, TelemetryAttributes, type JobsOptions, type Queue } from "bullmq";

/** A BullMQ add, built by BullMQ's own code but not sent: its script's keys and arguments. */
export interface CapturedJobAdd {
  /** `s`: BullMQ's addStandardJob; `p`: addPrioritizedJob (admission-script.ts runs either). */
  script: "s" | "p";
  keys: string[];
  args: Array<string | Buffer>;
  /** Ends BullMQ's add (and its trace span, tracing on) once the script ran: `error` when it did not. */
  settle(error?: Error): void;
}

const scripts: Record<string, "s" | "p"> = { addStandardJob: "s", addPrioritizedJob: "p" };

/**
 * What `queue.add(name, data, opts)` would send, without sending it: the job is made and
 * encoded by BullMQ (`Job#addJob` on a client that only records the command), inside the
 * queue's own trace span, so a job added by the admission script (admission.ts) carries
 * what BullMQ's add would have given it. Undefined when BullMQ chose a script the
 * admission does not run (a delayed job, a parent): the caller adds it the usual way.
 * Throws what BullMQ throws while building the job (an event too deep to stringify).
 */
export function captureJobAdd<Data>(queue: Queue<Data>, name: string, data: Data, opts: JobsOptions): CapturedJobAdd | undefined {
  let captured: { command: string; args: Array<string | Buffer> } | undefined;
  let settle!: (reply: string) => void;
  let fail!: (error: Error) => void;
  const reply = new Promise<string>((ok, no) => ((settle = ok), (fail = no)));
  // BullMQ's backend calls `runCommand("<script>:<version>", [...keys, ...args])`, synchronously.
  const recorder = {
    runCommand(command: string, args: Array<string | Buffer>) {
      captured = { command, args };
      return reply;
    },
  };
  let thrown: unknown;
  // queue.add's own steps (bullmq's queue.js `add` and `addJob`), with the recorder as the client.
  const added = queue.trace(SpanKind.PRODUCER, "add", `${queue.name}.${name}`, async (span, propagation) => {
    const withTrace = propagation && !opts.telemetry?.omitContext ? { ...opts, telemetry: { metadata: propagation } } : opts;
    const job = new Job(queue, name, data, { ...queue.defaultJobOptions, ...withTrace, jobId: opts.jobId }, opts.jobId);
    let id: Promise<string>;
    try {
      id = job.addJob(recorder as unknown as Parameters<Job["addJob"]>[0]);
    } catch (error) {
      thrown = error;
      throw error;
    }
    const jobId = await id;
    span?.setAttributes({ [TelemetryAttributes.JobName]: name, [TelemetryAttributes.JobId]: jobId });
    return jobId;
  });
  if (thrown !== undefined) {
    void added.catch(() => {});
    throw thrown;
  }
  const script = captured && scripts[captured.command.split(":")[0]!];
  if (!captured || !script) {
    void added.catch(() => {});
    fail(new Error("not added: BullMQ chose a script the admission does not run"));
    return undefined;
  }
  const all = captured.args;
  // Its keys first, then its 3 arguments (bullmq's redis-queue-backend.js `add*JobArgs`).
  return {
    script,
    keys: all.slice(0, all.length - 3) as string[],
    args: all.slice(all.length - 3),
    settle(error) {
      void added.catch(() => {});
      if (error) fail(error);
      else settle(opts.jobId ?? "");
    },
  };
}
