import type { AddressInfo } from "node:net";
import type { Serving } from "./serve.js";

/** The socket's own address, `0.0.0.0:8080` or `[::1]:9090`: what the start log shows beside the URL to reach it. */
export function boundAddress(serving: Pick<Serving, "server">): string {
  const address = serving.server.address() as AddressInfo;
  return address.family === "IPv6" ? `[${address.address}]:${address.port}` : `${address.address}:${address.port}`;
}
