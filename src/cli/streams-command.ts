import type { Command } from "commander";
import type { TenantClient } from "../tenant/create-tenant-client.js";
import type { EventStream } from "../tenant/event-stream.js";
import { validateStreamPatch, type StreamPatch } from "../tenant/stream-patch.js";
import { TenantValidationError } from "../tenant/tenant-api-error.js";
import { CliError } from "./cli-error.js";
import { formatTable } from "./format-table.js";
import { runAction } from "./run-action.js";
import { registerStreamsConnectCommand } from "./streams-connect-command.js";
import { createServiceClient } from "./service-client.js";
import { notSweptBecause, sweptByService, type SweptAnswer } from "./swept-by-service.js";
import { withTenantClient } from "./with-tenant-client.js";

interface ListOptions {
  take?: string;
  all?: boolean;
  json?: boolean;
}

interface UpdateOptions {
  name?: string;
  status?: string;
  subscribe?: string;
  endpoint?: string;
  auth?: string;
  username?: string;
  password?: string;
  token?: string;
  json?: boolean;
}

/** `streamkeeper streams list|update|connect` (README.md#commands). */
export function registerStreamsCommand(program: Command): void {
  const streams = program.command("streams").description("list and change the tenant's event streams");

  streams
    .command("list")
    .description("list event streams: id, name, status, whether this service sweeps it, subscriptions, endpoint")
    .option("--take <n>", "streams per page, 1 to 100 (tenant default 50)")
    .option("--all", "follow every page")
    .option("--json", "print one JSON array")
    .action(
      runAction((options: ListOptions) => {
        const take = takeOf(options.take);
        return withTenantClient((client, config) => list(client, take, options, () => sweptByService(createServiceClient(config.env), (line) => process.stderr.write(`${line}\n`))));
      }),
    );

  streams
    .command("update <stream-id>")
    .description("change a stream; --endpoint replaces the whole destination, so it needs --auth and its secret")
    .option("--name <s>", "1 to 128 characters")
    .option("--status <status>", "enabled or disabled")
    .option("--subscribe <types>", "event types, comma-separated (replaces the list), e.g. user.created,user.updated")
    .option("--endpoint <url>", "webhook URL (https; http only on loopback)")
    .option("--auth <method>", "basic (with --username, --password) or bearer (with --token)")
    .option("--username <u>", "for --auth basic")
    .option("--password <p>", "for --auth basic")
    .option("--token <t>", "for --auth bearer")
    .option("--json", "print the updated stream as JSON")
    .action(
      runAction((streamId: string, options: UpdateOptions) => {
        const patch = patchOf(options);
        return withTenantClient(async (client) => {
          const updated = await client.updateEventStream(streamId, patch);
          print(updated, options.json, `updated ${updated.id}`);
        });
      }),
    );

  registerStreamsConnectCommand(streams);
}

function takeOf(flag: string | undefined): number | undefined {
  if (flag === undefined) return undefined;
  const take = Number(flag);
  if (!/^\d+$/.test(flag) || take < 1 || take > 100) throw new CliError(`--take must be an integer from 1 to 100, got ${JSON.stringify(flag)}`, 2);
  return take;
}

async function list(client: TenantClient, take: number | undefined, options: ListOptions, sweptBy: () => Promise<(stream: EventStream) => SweptAnswer>): Promise<void> {
  let found: EventStream[];
  let more = false;
  if (options.all) {
    found = [];
    for await (const stream of client.eventStreams({ take })) found.push(stream);
  } else {
    const page = await client.listEventStreams({ take });
    found = page.eventStreams;
    more = page.next !== undefined;
  }
  // Asked once the tenant answered, so a tenant error stays the only line on stderr.
  const sweptOf = await sweptBy();
  if (options.json) {
    const listed = found.map((stream) => {
      const answer = sweptOf(stream);
      return { ...withoutSecrets(stream), swept: answer.swept, ...(answer.swept ? {} : { whyNotSwept: answer.reason }) };
    });
    process.stdout.write(JSON.stringify(listed, null, 2) + "\n");
  } else if (found.length === 0) {
    process.stderr.write("no event streams\n");
  } else {
    process.stdout.write(table(found, sweptOf));
  }
  if (more && !options.json) process.stderr.write("more streams exist: run with --all to list every page\n");
  // The list is the tenant's, and listing it succeeded (exit 0): a SWEPT the service could not tell is said once on stderr.
}

/** The flags as a PATCH body, checked by the same rules as the client; a bad value names its flag (exit 2). */
function patchOf(options: UpdateOptions): StreamPatch {
  const patch: Record<string, unknown> = {};
  if (options.name !== undefined) patch.name = options.name;
  if (options.status !== undefined) patch.status = options.status;
  if (options.subscribe !== undefined) {
    patch.subscriptions = options.subscribe
      .split(",")
      .map((type) => type.trim())
      .filter(Boolean)
      .map((event_type) => ({ event_type }));
  }
  if (options.endpoint !== undefined || options.auth !== undefined) {
    if (options.endpoint === undefined) throw new CliError("--auth needs --endpoint (they form the destination together)", 2);
    if (options.auth === undefined) throw new CliError("--endpoint needs --auth basic|bearer (the tenant replaces the whole destination)", 2);
    if (options.auth !== "basic" && options.auth !== "bearer") throw new CliError(`--auth must be basic or bearer, got ${JSON.stringify(options.auth)}`, 2);
    const authorization = options.auth === "basic" ? { method: "basic", username: options.username, password: options.password } : { method: "bearer", token: options.token };
    patch.destination = { type: "webhook", configuration: { webhook_endpoint: options.endpoint, webhook_authorization: authorization } };
  }
  if (Object.keys(patch).length === 0) throw new CliError("nothing to update: give --name, --status, --subscribe or --endpoint", 2);
  try {
    return validateStreamPatch(patch);
  } catch (error) {
    if (error instanceof TenantValidationError) {
      const flag = flagOf(error.field);
      throw new CliError(error.problem === "is required" ? `${flag} is required with --auth ${options.auth}` : `${flag}: ${error.problem}`, 2);
    }
    throw error;
  }
}

function flagOf(field: string): string {
  if (field.startsWith("subscriptions")) return "--subscribe";
  const last = field.split(".").at(-1);
  const flags: Record<string, string> = { name: "--name", status: "--status", webhook_endpoint: "--endpoint", method: "--auth", username: "--username", password: "--password", token: "--token" };
  return flags[last ?? ""] ?? field;
}

function print(stream: EventStream, json: boolean | undefined, headline: string): void {
  if (json) process.stdout.write(JSON.stringify(withoutSecrets(stream), null, 2) + "\n");
  else process.stdout.write(`${headline}\n${table([stream])}`);
}

/** With `sweptOf` (streams list), a SWEPT column: yes, or no and the setting behind it. */
function table(streams: EventStream[], sweptOf?: (stream: EventStream) => SweptAnswer): string {
  const swept = (stream: EventStream): string[] => {
    const answer = sweptOf?.(stream);
    if (!answer) return [];
    if (answer.swept === null) return [`unknown (${notSweptBecause[answer.reason]})`];
    return [answer.swept ? "yes" : `no (${notSweptBecause[answer.reason]})`];
  };
  return formatTable(
    ["ID", "NAME", "STATUS", ...(sweptOf ? ["SWEPT"] : []), "SUBSCRIPTIONS", "ENDPOINT"],
    streams.map((stream) => [
      stream.id,
      stream.name,
      stream.status,
      ...swept(stream),
      stream.subscriptions.map((subscription) => subscription.event_type).join(","),
      stream.destination.configuration?.webhook_endpoint ?? `(${stream.destination.type})`,
    ]),
  );
}

/** The tenant never returns write-only secrets (docs/tenant.md#updating-a-stream); strip them anyway in case one does. */
function withoutSecrets(stream: EventStream): EventStream {
  const authorization = stream.destination.configuration?.webhook_authorization;
  if (!authorization) return stream;
  const { password: _p, token: _t, header_value: _h, ...kept } = authorization;
  return { ...stream, destination: { ...stream.destination, configuration: { ...stream.destination.configuration, webhook_authorization: kept as typeof authorization } } };
}
