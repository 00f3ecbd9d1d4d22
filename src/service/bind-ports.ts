import { ConfigError, type Env } from "../config/config.js";
import { serveLater, type LateServing } from "../http/serve-later.js";

export interface Ports {
  /** The public ingress, for a role that receives webhooks. */
  public?: LateServing;
  admin: LateServing;
  /** Both released at once (a start that stops before serving). */
  release(): Promise<void>;
}

/**
 * Binds the ports first: one in use stops the start before anything in Redis changes
 * (http/serve-later.ts). Each answers 503 until its part is attached.
 */
export async function bindPorts(env: Env, withPublic: boolean): Promise<Ports> {
  const publicServer = withPublic
    ? await serveLater(env.PORT, env.HOST, { handlerSendsContinue: true, requestTimeoutMs: env.WEBHOOK_REQUEST_TIMEOUT_MS }).catch(portProblem("PORT", env.PORT, "HOST", env.HOST))
    : undefined;
  const admin = await serveLater(env.ADMIN_PORT, env.ADMIN_HOST).catch(async (error: NodeJS.ErrnoException) => {
    await publicServer?.close(0);
    return portProblem("ADMIN_PORT", env.ADMIN_PORT, "ADMIN_HOST", env.ADMIN_HOST)(error);
  });
  return {
    public: publicServer,
    admin,
    release: async () => void (await Promise.all([publicServer?.close(0), admin.close(0)])),
  };
}

/** A port or an address that cannot be bound is a setting to change (exit 2), not a failure of the service. */
function portProblem(setting: string, port: number, hostSetting: string, host: string) {
  return (error: NodeJS.ErrnoException): never => {
    if (error.code === "EADDRINUSE") throw new ConfigError([`${setting} ${port} is already in use: stop what listens there or choose another ${setting}`]);
    if (error.code === "EACCES") throw new ConfigError([`${setting} ${port} needs privileges: choose a port above 1023`]);
    if (error.code === "ENOTFOUND" || error.code === "EAI_AGAIN") throw new ConfigError([`${hostSetting} ${host} does not resolve to an address: give an IP address of this machine or a name that resolves to one (127.0.0.1, 0.0.0.0)`]);
    if (error.code === "EADDRNOTAVAIL" || error.code === "EINVAL") throw new ConfigError([`${hostSetting} ${host} is not an address of this machine: give one of its own (127.0.0.1, or 0.0.0.0 for every interface)`]);
    throw error;
  };
}
