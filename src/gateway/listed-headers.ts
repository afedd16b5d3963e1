/**
 * The response headers every request decides before its route runs (request id, security headers, rate limit),
 * kept as a flat list until something needs them as Node's headers, so a cached page can send them all in one
 * `writeHead(status, list)` (issue 48).
 *
 * Each `setHeader` validates the name and value, lower-cases the name and files both in a dictionary-mode object
 * that `_storeHeader` walks again to write them out: ~2 µs of a cached feed read's ~11 µs of CPU went to the
 * thirteen headers every response carries (bench/README.md, Gateway). Node writes headers handed to `writeHead` as
 * an array straight to the wire when none was set before (validated once, as they are written); this response
 * keeps the early headers in a list so that this is possible, and behaves as a plain ServerResponse otherwise:
 * any other use of the headers (setting, reading, removing, writing the head, Koa's body setter and error
 * handling) first sets the listed ones, in their order, as `setHeader` would have then.
 *
 * After `sendListed` the headers are on the wire, not on the response: like any `writeHead` with headers and none
 * set before, `getHeader` no longer sees them (Node's documented behaviour). Nothing reads a response's headers
 * after its route sent a page (the access log and metrics read its status).
 */
import { ServerResponse, type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http';

type HeaderValue = number | string | readonly string[];

/** Node's OutgoingMessage#getRawHeaderNames, which @types/node does not declare. */
const rawHeaderNames = (res: ServerResponse): string[] =>
  (
    ServerResponse.prototype as unknown as { getRawHeaderNames: (this: ServerResponse) => string[] }
  ).getRawHeaderNames.call(res);

/** Whether two header names are the same in any letter case (no string made: this runs ~60 times a request). */
function sameName(a: string, b: string): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x >= 65 && x <= 90) x += 32;
    if (y >= 65 && y <= 90) y += 32;
    if (x !== y) return false;
  }
  return true;
}

/** Sets `name` in a flat list: its value replaced where the list has the name (in any case), else appended. */
function put(list: string[], name: string, value: string): void {
  for (let i = 0; i < list.length; i += 2) {
    if (sameName(list[i]!, name)) {
      list[i] = name;
      list[i + 1] = value;
      return;
    }
  }
  list.push(name, value);
}

export class ListedHeadersResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  /** Headers listed and not yet set: name, value, name, value… */
  #listed: string[] = [];
  /** Once true, the response's headers are Node's (list() sets them directly). */
  #set = false;

  /**
   * Adds a header to the list, replacing a listed one of the same name as setHeader would (or sets it, once
   * headers have been used any other way).
   */
  list(name: string, value: string): void {
    if (this.#set) super.setHeader(name, value);
    else put(this.#listed, name, value);
  }

  /**
   * Writes the status line, the listed headers followed by `headers`, and the body, in one `writeHead`; false (and
   * nothing written) when headers were set some other way first: the caller sends as usual.
   */
  sendListed(status: number, headers: readonly string[], body: Buffer | string): boolean {
    if (this.#set) return false;
    this.#set = true;
    const all = this.#listed;
    this.#listed = [];
    for (let i = 0; i < headers.length; i += 2) put(all, headers[i]!, headers[i + 1]!);
    super.writeHead(status, all);
    this.end(body);
    return true;
  }

  /** The listed headers become Node's, as if each had been set with setHeader when it was listed. */
  #use(): void {
    if (this.#set) return;
    this.#set = true;
    const listed = this.#listed;
    this.#listed = [];
    for (let i = 0; i < listed.length; i += 2) super.setHeader(listed[i]!, listed[i + 1]!);
  }

  override setHeader(name: string, value: HeaderValue): this {
    this.#use();
    return super.setHeader(name, value);
  }

  override setHeaders(headers: Headers | Map<string, HeaderValue>): this {
    this.#use();
    return super.setHeaders(headers);
  }

  override appendHeader(name: string, value: string | readonly string[]): this {
    this.#use();
    return super.appendHeader(name, value);
  }

  override getHeader(name: string): ReturnType<ServerResponse['getHeader']> {
    this.#use();
    return super.getHeader(name);
  }

  override getHeaders(): OutgoingHttpHeaders {
    this.#use();
    return super.getHeaders();
  }

  override getHeaderNames(): string[] {
    this.#use();
    return super.getHeaderNames();
  }

  /** Node's, not in @types/node. */
  getRawHeaderNames(): string[] {
    this.#use();
    return rawHeaderNames(this);
  }

  override hasHeader(name: string): boolean {
    this.#use();
    return super.hasHeader(name);
  }

  override removeHeader(name: string): void {
    this.#use();
    super.removeHeader(name);
  }

  override writeHead(
    statusCode: number,
    reason?: string | OutgoingHttpHeaders | OutgoingHttpHeader[],
    headers?: OutgoingHttpHeaders | OutgoingHttpHeader[],
  ): this {
    this.#use();
    // Node's overloads: (status, headers) and (status, reason, headers).
    return typeof reason === 'string'
      ? super.writeHead(statusCode, reason, headers)
      : super.writeHead(statusCode, reason ?? headers);
  }

  override flushHeaders(): void {
    this.#use();
    super.flushHeaders();
  }
}

/** Lists a header on a ListedHeadersResponse; sets it on any other response (a test's plain server). */
export function listHeader(res: ServerResponse, name: string, value: string): void {
  if (res instanceof ListedHeadersResponse) res.list(name, value);
  else res.setHeader(name, value);
}
