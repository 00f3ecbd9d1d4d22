import { createServer, type AddressInfo, type Socket } from "node:net";

export interface OldRedis {
  /** `redis://127.0.0.1:<port>` */
  url: string;
  /** Every command received, upper-cased name first. */
  commands: string[][];
  close(): Promise<void>;
}

/**
 * A real TCP server speaking just enough RESP2 to pass for a Redis of `version`: it
 * refuses HELLO as Redis 5 does (so a client falls back to RESP2), answers INFO with that
 * version, PING with PONG, SCAN with an empty keyspace, and OK to anything else. For start-up checks, not for storing.
 */
export async function startOldRedis(version: string): Promise<OldRedis> {
  const commands: string[][] = [];
  const sockets = new Set<Socket>();
  const info = `# Server\r\nredis_version:${version}\r\nredis_mode:standalone\r\nloading:0\r\n# Replication\r\nrole:master\r\n`;
  const reply = (command: string[]): string => {
    const name = command[0]?.toUpperCase() ?? "";
    if (name === "HELLO") return `-ERR unknown command 'HELLO'\r\n`;
    if (name === "INFO") return `$${Buffer.byteLength(info)}\r\n${info}\r\n`;
    // An empty keyspace: the start's SCAN for routes no longer configured ends at once.
    if (name === "SCAN") return "*2\r\n$1\r\n0\r\n*0\r\n";
    if (name === "PING") return "+PONG\r\n";
    return "+OK\r\n";
  };
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    let buffered = Buffer.alloc(0);
    socket.on("data", (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        const parsed = parseCommand(buffered);
        if (!parsed) break;
        buffered = buffered.subarray(parsed.length);
        commands.push(parsed.command);
        socket.write(reply(parsed.command));
      }
    });
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  return {
    url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`,
    commands,
    close: () =>
      new Promise<void>((ok) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => ok());
      }),
  };
}

/** One RESP array of bulk strings from the start of `buffer`, or undefined until it is complete. */
function parseCommand(buffer: Buffer): { command: string[]; length: number } | undefined {
  const line = (from: number) => {
    const end = buffer.indexOf("\r\n", from);
    return end === -1 ? undefined : { text: buffer.toString("latin1", from, end), next: end + 2 };
  };
  const head = line(0);
  if (!head) return undefined;
  if (!head.text.startsWith("*")) return { command: head.text.split(" "), length: head.next }; // an inline command
  const count = Number(head.text.slice(1));
  const command: string[] = [];
  let at = head.next;
  for (let index = 0; index < count; index++) {
    const size = line(at);
    if (!size) return undefined;
    const bytes = Number(size.text.slice(1));
    if (buffer.length < size.next + bytes + 2) return undefined;
    command.push(buffer.toString("utf8", size.next, size.next + bytes));
    at = size.next + bytes + 2;
  }
  return { command, length: at };
}
