// Every answer a suite receives is checked against the service's own description (GET /openapi.json,
// the one client/src/generated/openapi.ts is generated from): the request's operation must be described,
// the status must be one the operation documents, and a JSON body must validate against the documented
// schema of that status. So a drift between the description and the service fails a test.
import type { Middleware } from 'openapi-fetch';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

type Json = Record<string, any>;
const JSON_TYPE = /^application\/([\w.+-]*\+)?json\b/i;
interface Operation {
  method: string;
  template: string;
  regex: RegExp;
  /** Literal segments: `/v1/records/lookup` wins over `/v1/records/{id}`. */
  literals: number;
  op: Json;
}

/** The description of one service, compiled for checking answers. */
export class Description {
  private readonly ajv: Ajv2020;
  private readonly ops: Operation[] = [];
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(readonly doc: Json) {
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
    addFormats(this.ajv);
    // The whole document is one schema resource: `#/components/schemas/...` resolve against it.
    this.ajv.addSchema({ ...doc, $id: 'openapi.json' });
    for (const [template, item] of Object.entries(doc.paths as Record<string, Json>)) {
      const segments = template.split('/');
      const regex = new RegExp(
        '^' +
          segments.map((s) => (/^\{[^}]+\}$/.test(s) ? '[^/]+' : s.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))).join('/') +
          '$',
      );
      const literals = segments.filter((s) => s && !s.startsWith('{')).length;
      for (const [method, op] of Object.entries(item))
        if (op && typeof op === 'object' && 'responses' in op)
          this.ops.push({ method: method.toUpperCase(), template, regex, literals, op });
    }
    this.ops.sort((a, b) => b.literals - a.literals);
  }

  /** The described operation of a request (HEAD is its GET). */
  find(method: string, pathname: string): Operation | undefined {
    const m = method.toUpperCase() === 'HEAD' ? 'GET' : method.toUpperCase();
    return this.ops.find((o) => o.method === m && o.regex.test(pathname));
  }

  private resolve(node: Json | undefined): Json | undefined {
    let n = node;
    while (n && typeof n.$ref === 'string' && n.$ref.startsWith('#/'))
      n = n.$ref
        .slice(2)
        .split('/')
        .reduce((o: Json, k: string) => o?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], this.doc);
    return n;
  }

  /**
   * Why an answer does not fit the description, or undefined when it does. `bodyText` is undefined when the
   * body is not to be validated (a pinned Service-Version asks for another shape).
   */
  check(
    method: string,
    url: URL,
    status: number,
    contentType: string | null,
    bodyText: string | undefined,
  ): string | undefined {
    const at = `${method} ${url.pathname}${url.search}`;
    // The description itself is not among its operations (it is built before its own route): it must be there.
    if (url.pathname === '/openapi.json' && /^(GET|HEAD)$/i.test(method))
      return status === 200 ? undefined : `${at} answered ${status}`;
    const op = this.find(method, url.pathname);
    if (!op)
      return `${at} answered ${status}, but /openapi.json describes no ${method.toUpperCase()} operation for this path`;
    const id = `${op.op.operationId ?? op.template} (${op.method} ${op.template})`;
    const documented = Object.keys(op.op.responses).filter((s) => s !== 'default');
    if (!documented.includes(String(status)))
      return (
        `${at} answered ${status}: ${id} documents only ` +
        `${documented.join(', ')}${bodyText ? `; body: ${bodyText.slice(0, 300)}` : ''}`
      );
    if (bodyText === undefined || method.toUpperCase() === 'HEAD' || status === 204) return undefined;
    const response = this.resolve(op.op.responses[String(status)]);
    const content = (response?.content ?? {}) as Json;
    const isJson = !!contentType && JSON_TYPE.test(contentType);
    if (!isJson) return undefined;
    const key = Object.keys(content).find((t) => /^application\/([\w.+-]*\+)?json$/i.test(t));
    if (!key) {
      if (!bodyText) return undefined;
      return (
        `${at} answered ${status} with a JSON body, but ${id} documents ` +
        `${Object.keys(content).join(', ') || 'no body'} for ${status}`
      );
    }
    if (!bodyText) return undefined;
    let body: unknown;
    try {
      body = JSON.parse(bodyText);
    } catch {
      return (
        `${at} answered ${status} with content-type ${contentType} and a body that is not JSON: ` +
        `${bodyText.slice(0, 200)}`
      );
    }
    // The schema by JSON pointer into the document (through the response's $ref, when it has one).
    const documentedAnswer = op.op.responses[String(status)] as Json;
    const esc = (k: string) => k.replace(/~/g, '~0').replace(/\//g, '~1');
    const base =
      typeof documentedAnswer.$ref === 'string'
        ? documentedAnswer.$ref.slice(1)
        : '/' + ['paths', op.template, op.method.toLowerCase(), 'responses', String(status)].map(esc).join('/');
    const ref = `openapi.json#${base}/content/${esc(key)}/schema`;
    let validate = this.validators.get(ref);
    if (!validate) {
      validate = this.ajv.compile({ $ref: ref });
      this.validators.set(ref, validate);
    }
    if (validate(body)) return undefined;
    const errors = (validate.errors ?? [])
      .slice(0, 8)
      .map(
        (e) =>
          `${e.instancePath || '(body)'} ` +
          `${e.message}${e.params && Object.keys(e.params).length ? ' ' + JSON.stringify(e.params) : ''}`,
      )
      .join('; ');
    return (
      `${at} answered ${status} with a body that does not match the documented schema of ${id}: ${errors}; ` +
      `body: ${bodyText.slice(0, 400)}`
    );
  }
}

const descriptions = new Map<string, Promise<Description>>();

/** The description a service serves (fetched once per base URL, outside the checked client). */
export function descriptionOf(baseUrl: string): Promise<Description> {
  const key = baseUrl.replace(/\/+$/, '');
  let d = descriptions.get(key);
  if (!d) {
    d = (async () => {
      const r = await fetch(`${key}/openapi.json`);
      if (!r.ok) throw new Error(`GET ${key}/openapi.json: ${r.status}`);
      return new Description((await r.json()) as Json);
    })();
    d.catch(() => descriptions.delete(key));
    descriptions.set(key, d);
  }
  return d;
}

/** Forgets a stopped service's description (the port may be reused by another service). */
export const forgetDescription = (baseUrl: string) => descriptions.delete(baseUrl.replace(/\/+$/, ''));

/** A described-answer failure: thrown from the client, so the request's test fails with it. */
export class UndescribedAnswer extends Error {
  override name = 'UndescribedAnswer';
}

/**
 * openapi-fetch middleware checking every answer against the description of `baseUrl`. A request carrying a
 * Service-Version header is checked for its status only: a pinned version may answer another shape.
 */
export function describedAnswers(baseUrl: string): Middleware {
  return {
    async onResponse({ request, response }) {
      const d = await descriptionOf(baseUrl);
      const ct = response.headers.get('content-type');
      const pinned = request.headers.has('service-version');
      // Only a JSON body is read (a copy): a stream (SSE, NDJSON export) is left to the caller, with its back-pressure.
      const json = !!ct && JSON_TYPE.test(ct);
      const text = pinned || !json || request.method === 'HEAD' ? undefined : await response.clone().text();
      const why = d.check(request.method, new URL(request.url), response.status, ct, text);
      if (why) {
        void response.body?.cancel().catch(() => {});
        throw new UndescribedAnswer(why);
      }
      return undefined;
    },
  };
}
