import express from "express";
import { createServer } from "node:http";
import { serveBenchProcess } from "../lib/serve-bench-process.js";

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
serveBenchProcess(createServer(app));
