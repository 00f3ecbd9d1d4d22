import type { Command } from "commander";
import { loadConfig, type Config } from "../config/config.js";
import { ConnectStreamError, connectStream, describeConnection, webhookUrl } from "../streams/connect-stream.js";
import { eventStreamSchema, type EventStream } from "../tenant/event-stream.js";
import { CliError } from "./cli-error.js";
import { runAction } from "./run-action.js";
import { createServiceClient, problemDetail, type ServiceClient } from "./service-client.js";
import { withTenantClient } from "./with-tenant-client.js";

/**
 * `streamkeeper streams connect <stream-id> [--public-url <url>]` (README.md#commands): through the
 * running service's admin API, so the stream gets the credentials the service checks; only
 * with no service reachable, with this shell's WEBHOOK_* when every one is set. It never
 * generates credentials: a shell that did pushed ones no service knew.
 */
export function registerStreamsConnectCommand(streams: Command): void {
  streams
    .command("connect <stream-id>")
    .description("point the stream at this service: <public-url>/webhooks/<stream-id> with the service's webhook credentials")
    .option("--public-url <url>", "where the tenant reaches this service, e.g. https://hooks.example.com (default: the service's PUBLIC_URL)")
    .action(
      runAction(async (streamId: string, options: { publicUrl?: string }) => {
        const config = loadConfig();
        try {
          if (options.publicUrl !== undefined) webhookUrl(options.publicUrl, streamId, "--public-url");
          const service = createServiceClient(config.env);
          const answer = await service.ask("POST", `/admin/streams/${encodeURIComponent(streamId)}/connect`, {
            body: options.publicUrl === undefined ? {} : { publicUrl: options.publicUrl },
            timeoutMs: 120_000,
          });
          const stream = answer.reachable ? throughService(answer, service) : await fromThisShell(config, streamId, options.publicUrl, answer.url);
          process.stdout.write(`${describeConnection(stream)}\n`);
          if (stream.status === "disabled") {
            process.stderr.write(`note: the stream is disabled; enable it with: streamkeeper streams update ${stream.id} --status enabled\n`);
          }
        } catch (error) {
          // A bad public URL, or WEBHOOK_AUTH=none: usage or settings to change.
          if (error instanceof ConnectStreamError) throw new CliError(error.message, 2);
          throw error;
        }
      }),
    );
}

function throughService(answer: { url: string; status: number; body: unknown }, service: ServiceClient): EventStream {
  if (answer.status === 200) {
    const stream = eventStreamSchema.safeParse(answer.body);
    if (stream.success) return stream.data;
    throw new CliError(`the service at ${answer.url} answered 200 without a stream: is ADMIN_URL a Streamkeeper admin address?`);
  }
  const detail = problemDetail(answer);
  if (answer.status === 400 && detail.startsWith("no public URL is known")) {
    throw new CliError(`the service at ${answer.url} knows no public URL: give --public-url, or set PUBLIC_URL for the service`, 2);
  }
  if (answer.status === 401 || answer.status === 403) throw service.refusal(answer);
  throw new CliError(`the service at ${answer.url} answered ${answer.status}: ${detail}`, answer.status === 400 || answer.status === 409 ? 2 : 1);
}

/** No service answers: this shell's own credentials, only when every one its WEBHOOK_AUTH needs is set. */
async function fromThisShell(config: Config, streamId: string, publicUrl: string | undefined, adminUrl: string): Promise<EventStream> {
  const auth = config.webhookAuth;
  const noService = `no service answers at ${adminUrl} (set ADMIN_URL to where it runs)`;
  if ("generated" in auth) {
    throw new CliError(`${noService}, and this shell has no webhook credentials: start the service, or set WEBHOOK_USERNAME and WEBHOOK_PASSWORD (or WEBHOOK_AUTH with its WEBHOOK_* settings) to the ones the service checks`, 2);
  }
  const base = publicUrl ?? config.env.PUBLIC_URL;
  if (base === undefined) throw new CliError(`${noService}: give --public-url or set PUBLIC_URL`, 2);
  const endpoint = webhookUrl(base, streamId, publicUrl === undefined ? "PUBLIC_URL" : "--public-url");
  let stream: EventStream | undefined;
  await withTenantClient(async (client) => {
    stream = await connectStream(client, streamId, endpoint, auth);
  });
  // One line, as every command that could not act with the service's configuration (CONTRACT).
  process.stderr.write(`note: ${noService}: the stream got this shell's WEBHOOK_* credentials; if the service checks others, run this again where ADMIN_URL reaches it\n`);
  return stream!;
}
