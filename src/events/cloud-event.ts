/**
 * A CloudEvent as received, every attribute kept (extensions such as `a0tenant` and
 * `a0stream` included). CloudEvents 1.0 §3.1: `id`, `source`, `specversion`, `type`
 * are required; the rest are optional or extensions.
 */
export interface CloudEvent {
  id: string;
  source: string;
  specversion: "1.0";
  type: string;
  time?: string;
  subject?: string;
  datacontenttype?: string;
  dataschema?: string;
  data?: unknown;
  data_base64?: string;
  [extension: string]: unknown;
}

/** How an event reached us: pushed by the tenant, recovered from its delivery history, or read from its event log. */
export type Origin = "webhook" | "reconcile" | "pull";
