// Labelled form controls that show the API's error about them right below, tied to the control (aria-describedby,
// aria-invalid) so a screen reader announces it with the control.
import type { ComponentChildren } from 'preact';
import { useId } from 'preact/hooks';
import { issueAt } from './errors';
import type { ApiError } from '../api';

interface Common {
  label: string;
  /** The API's path of this value (`typeName`, `payload.title`), for its error. */
  path?: string;
  error?: ApiError;
  hint?: string;
  required?: boolean;
  disabled?: boolean;
}

function Wrap({
  id,
  label,
  hint,
  message,
  children,
  required,
}: {
  id: string;
  label: string;
  hint?: string;
  message?: string;
  children: ComponentChildren;
  required?: boolean;
}) {
  return (
    <div class={`field${message ? ' field-invalid' : ''}`}>
      <label for={id}>
        {label}
        {required ? <span aria-hidden="true"> *</span> : null}
      </label>
      {children}
      {hint ? (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      ) : null}
      {message ? (
        <p class="field-error" id={`${id}-error`} role="alert">
          {message}
        </p>
      ) : null}
    </div>
  );
}

const describedBy = (id: string, hint?: string, message?: string) =>
  [hint ? `${id}-hint` : '', message ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;

export function TextField(
  p: Common & {
    value: string;
    onInput: (v: string) => void;
    type?: string;
    name?: string;
    multiline?: boolean;
    rows?: number;
    autocomplete?: string;
    placeholder?: string;
  },
) {
  const id = useId();
  const message = p.path ? issueAt(p.error, p.path) : undefined;
  const attrs = {
    id,
    name: p.name ?? p.path,
    value: p.value,
    required: p.required,
    disabled: p.disabled,
    placeholder: p.placeholder,
    'aria-invalid': message ? ('true' as const) : undefined,
    'aria-describedby': describedBy(id, p.hint, message),
    onInput: (e: Event) => p.onInput((e.currentTarget as HTMLInputElement).value),
  };
  return (
    <Wrap id={id} label={p.label} hint={p.hint} message={message} required={p.required}>
      {p.multiline ? (
        <textarea rows={p.rows ?? 6} {...attrs} />
      ) : (
        <input type={p.type ?? 'text'} autocomplete={p.autocomplete ?? 'off'} spellcheck={false} {...attrs} />
      )}
    </Wrap>
  );
}

export function SelectField(
  p: Common & {
    value: string;
    onChange: (v: string) => void;
    options: Array<string | { value: string; label: string }>;
    name?: string;
  },
) {
  const id = useId();
  const message = p.path ? issueAt(p.error, p.path) : undefined;
  return (
    <Wrap id={id} label={p.label} hint={p.hint} message={message} required={p.required}>
      <select
        id={id}
        name={p.name ?? p.path}
        value={p.value}
        disabled={p.disabled}
        aria-invalid={message ? 'true' : undefined}
        aria-describedby={describedBy(id, p.hint, message)}
        onChange={(e) => p.onChange((e.currentTarget as HTMLSelectElement).value)}
      >
        {p.options.map((o) =>
          typeof o === 'string' ? <option value={o}>{o}</option> : <option value={o.value}>{o.label}</option>,
        )}
      </select>
    </Wrap>
  );
}

export function CheckField(p: Common & { checked: boolean; onChange: (v: boolean) => void; name?: string }) {
  const id = useId();
  const message = p.path ? issueAt(p.error, p.path) : undefined;
  return (
    <div class={`field field-check${message ? ' field-invalid' : ''}`}>
      <input
        type="checkbox"
        id={id}
        name={p.name ?? p.path}
        checked={p.checked}
        disabled={p.disabled}
        aria-invalid={message ? 'true' : undefined}
        aria-describedby={describedBy(id, p.hint, message)}
        onChange={(e) => p.onChange((e.currentTarget as HTMLInputElement).checked)}
      />
      <label for={id}>{p.label}</label>
      {message ? (
        <p class="field-error" id={`${id}-error`} role="alert">
          {message}
        </p>
      ) : null}
    </div>
  );
}
