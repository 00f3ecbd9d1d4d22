import express from "express";

/**
 * The ceiling: a bare Express 5 app answering 202 to the same webhook requests, in its
 * own process, with nothing behind it (no auth, no body parsing, no Redis). Whatever
 * the receiver achieves is measured against this on the same machine in the same run.
 */
const app = express();
app.disable("x-powered-by");
app.set("etag", false);
app.post(["/webhooks", "/webhooks/:streamId"], (_req, res) => {
  res.status(202).json({ accepted: 1, duplicates: 0 });
});
const server = app.listen(0, "127.0.0.1", () => {
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  process.stdout.write(`${JSON.stringify({ ready: true, url: `http://127.0.0.1:${port}` })}\n`);
});
server.keepAliveTimeout = 65_000;
process.once("SIGTERM", () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
