import { ConfigError, type Env } from "../config.js";
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
    ? await serveLater(env.PORT, env.HOST, { handlerSendsContinue: true, requestTimeoutMs: env.WEBHOOK_REQUEST_TIMEOUT_MS }).catch(portProblem("PORT", env.PORT))
    : undefined;
  const admin = await serveLater(env.ADMIN_PORT, env.ADMIN_HOST).catch(async (error: NodeJS.ErrnoException) => {
    await publicServer?.close(0);
    return portProblem("ADMIN_PORT", env.ADMIN_PORT)(error);
  });
  return {
    public: publicServer,
    admin,
    release: async () => void (await Promise.all([publicServer?.close(0), admin.close(0)])),
  };
}

/** A port that cannot be bound is a setting to change (exit 2), not a failure of the service. */
function portProblem(setting: string, port: number) {
  return (error: NodeJS.ErrnoException): never => {
    if (error.code === "EADDRINUSE") throw new ConfigError([`${setting} ${port} is already in use: stop what listens there or choose another ${setting}`]);
    if (error.code === "EACCES") throw new ConfigError([`${setting} ${port} needs privileges: choose a port above 1023`]);
    throw error;
  };
}
