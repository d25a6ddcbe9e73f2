// The API's refusals on the page. A validation error names the field it is about: in the error body's extra fields
// (`field`, `path`, `fields`) when it carries them, else as the message's `<path>: <reason>` (`Invalid body:
// fields.0.fieldType: ...`, `payload.title: must be a string`; several issues are joined with "; "). Forms show each
// error next to the control of that path, and whatever matches no control of the form in the form's summary.
import type { ApiError } from '../api';

export interface FieldIssue {
  path: string;
  message: string;
}

const ISSUE = /^([A-Za-z_][\w-]*(?:[.[][\w-]+\]?)*): (.+)$/s;

/** The issues of an error that name a field (`path` dotted: `payload.title`, `fields.0.fieldType`). */
export function fieldIssues(error: ApiError | undefined): FieldIssue[] {
  if (!error) return [];
  const body = error.body as Record<string, unknown>;
  const out: FieldIssue[] = [];
  const named = body.field ?? body.path;
  if (typeof named === 'string') out.push({ path: named, message: String(body.message ?? '') });
  if (Array.isArray(body.fields))
    for (const f of body.fields)
      if (f && typeof f === 'object' && typeof f.path === 'string')
        out.push({ path: f.path, message: String(f.message ?? '') });
  if (out.length) return out;
  const message = String(body.message ?? '').replace(/^Invalid (body|query|path parameters?): /, '');
  for (const part of message.split('; ')) {
    const m = ISSUE.exec(part.trim());
    if (m) out.push({ path: m[1].replace(/\[(\w+)\]/g, '.$1'), message: m[2] });
  }
  return out;
}

/** The message for the control at `path` (an issue about it or about something inside it), if any. */
export function issueAt(error: ApiError | undefined, path: string): string | undefined {
  const hit = fieldIssues(error).find((i) => i.path === path || i.path.startsWith(`${path}.`));
  return hit ? hit.message : undefined;
}

/** Whether some control of the form shows this error (so the summary need not repeat it). */
export function shownAtField(error: ApiError | undefined, paths: string[]): boolean {
  const issues = fieldIssues(error);
  return issues.length > 0 && issues.every((i) => paths.some((p) => i.path === p || i.path.startsWith(`${p}.`)));
}

/** An error of the API as a person reads it: its message, code, status and request id (for a support request). */
export function ErrorMessage({ error, title, id }: { error: ApiError | undefined; title?: string; id?: string }) {
  if (!error) return null;
  const b = error.body as Record<string, unknown>;
  return (
    <div class="error" role="alert" id={id}>
      <strong>{title ?? (error.status === 409 ? 'Conflict' : 'The service refused this')}</strong>
      <p class="error-message">{String(b.message ?? error.message)}</p>
      <p class="error-meta">
        {error.status ? `${error.status} ` : ''}
        {error.errorCode ?? ''}
        {error.requestId ? ` · request ${error.requestId}` : ''}
      </p>
    </div>
  );
}
