import { connect } from "node:net";
import { once } from "node:events";

export interface CommandWatch {
  close(): void;
}

/**
 * Every command Redis runs, scripts' own included, as its arguments (MONITOR), on a socket
 * of its own. Not ioredis's `monitor()`: its connection can read the first monitored lines
 * as replies when they arrive with MONITOR's `+OK`, and throws "Command queue state error"
 * outside any test (a CI run caught it).
 */
export async function watchRedisCommands(redisUrl: string, onCommand: (args: string[]) => void): Promise<CommandWatch> {
  const { hostname, port } = new URL(redisUrl);
  const socket = connect(Number(port), hostname);
  await once(socket, "connect");
  socket.setEncoding("latin1");
  let buffered = "";
  let confirmed: () => void = () => undefined;
  const started = new Promise<void>((ok) => (confirmed = ok));
  socket.on("data", (chunk: string) => {
    buffered += chunk;
    const lines = buffered.split("\r\n");
    buffered = lines.pop()!;
    for (const line of lines) {
      if (line === "+OK") confirmed();
      else if (line.startsWith("+")) onCommand(argumentsOf(line));
    }
  });
  socket.on("error", () => undefined);
  socket.write("MONITOR\r\n");
  await started;
  return { close: () => socket.destroy() };
}

/** `+1700000000.000000 [0 127.0.0.1:1234] "evalsha" "ab\"c"` → ["evalsha", "ab\"c"]. */
function argumentsOf(line: string): string[] {
  return [...line.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map(([, quoted]) => quoted!.replace(/\\x([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))).replace(/\\(.)/g, "$1"));
}
