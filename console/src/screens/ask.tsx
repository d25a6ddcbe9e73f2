// Ask and chat: a question over the context (POST /v1/rag), about one document (POST /v1/documents/{id}/ask) or a
// chat (POST /v1/chat), the answer shown as its Server-Sent Events arrive, with the passages the service retrieved
// (RAG's search_results, the document ask's document_context) beside it and what the answer cost. The model catalog
// (GET /v1/models) and the inference balance (GET /v1/usage) are shown above.
import { useRef, useState } from 'preact/hooks';
import type { Schemas } from '@svc/client';
import { ApiError, asApiError, unwrap, useClient, useLoad } from '../api';
import { ErrorMessage, shownAtField } from '../components/errors';
import { SelectField, TextField } from '../components/fields';
import { Snippet } from '../components/snippet';
import { useTitles } from '../components/titles';
import { href } from '../router';
import type { ScreenProps } from './screen-props';

type Kind = 'rag' | 'ask' | 'chat';
type Passage = Schemas['SearchResultsEvent']['data']['results'][number];
type Done = Schemas['DoneEvent']['data'];
interface Turn {
  role: 'user' | 'assistant';
  content: string;
}

const PATHS = ['query', 'prompt', 'id', 'model', 'maxTokens', 'search.mode', 'search.typeName', 'messages'];

export default function Ask({ params }: ScreenProps) {
  const kind: Kind = params[0] === 'document' ? 'ask' : params[0] === 'chat' ? 'chat' : 'rag';
  const client = useClient();
  const catalog = useLoad((c) => unwrap(c.GET('/v1/models')), []);
  const usage = useLoad((c) => unwrap(c.GET('/v1/usage')), []);
  const [question, setQuestion] = useState('');
  const [documentId, setDocumentId] = useState('');
  const [mode, setMode] = useState('HYBRID');
  const [model, setModel] = useState('');
  const [answer, setAnswer] = useState('');
  const [passages, setPassages] = useState<Passage[]>();
  const [docContext, setDocContext] = useState<Schemas['DocumentContextEvent']['data']>();
  const [done, setDone] = useState<Done>();
  const [error, setError] = useState<ApiError>();
  const [streaming, setStreaming] = useState(false);
  const [history, setHistory] = useState<Turn[]>([]);
  const stop = useRef<() => void>();

  async function send(e: Event) {
    e.preventDefault();
    setAnswer('');
    setPassages(undefined);
    setDocContext(undefined);
    setDone(undefined);
    setError(undefined);
    setStreaming(true);
    const m = model ? { model } : {};
    const turns: Turn[] = [...history, { role: 'user', content: question }];
    const stream =
      kind === 'rag'
        ? client.rag({ query: question, ...m, search: { mode: mode as 'HYBRID' } })
        : kind === 'ask'
          ? client.askDocument(documentId, { prompt: question, ...m })
          : client.chat({ messages: turns, ...m });
    let cancelled = false;
    stop.current = () => (cancelled = true);
    let text = '';
    try {
      for await (const ev of stream) {
        if (cancelled) break;
        if (ev.event === 'search_results') setPassages(ev.data.results);
        else if (ev.event === 'document_context') setDocContext(ev.data);
        else if (ev.event === 'content_delta') setAnswer((text += ev.data.delta));
        else if (ev.event === 'done') setDone(ev.data);
        else if (ev.event === 'error')
          setError(new ApiError(502, { message: ev.data.message, errorCode: ev.data.code }));
      }
      if (kind === 'chat' && text) setHistory([...turns, { role: 'assistant', content: text }]);
    } catch (err) {
      setError(asApiError(err));
    }
    setStreaming(false);
    usage.reload();
  }

  const models = catalog.data?.models ?? [];
  const title = useTitles(passages ?? []);
  const balance = usage.data ? <strong>{(usage.data.inference.balanceCents / 100).toFixed(2)}</strong> : '…';
  return (
    <section>
      <h1>Ask and chat</h1>
      <nav class="tabs" aria-label="What to ask">
        <a href={href('ask')} aria-current={kind === 'rag' ? 'page' : undefined}>
          Ask the context
        </a>
        <a href={href('ask', 'document')} aria-current={kind === 'ask' ? 'page' : undefined}>
          Ask a document
        </a>
        <a href={href('ask', 'chat')} aria-current={kind === 'chat' ? 'page' : undefined}>
          Chat
        </a>
      </nav>
      <p class="balance">
        Inference balance: {balance} (spent this month:{' '}
        {usage.data ? (usage.data.inference.costCents / 100).toFixed(2) : '…'}) · credits used this month:{' '}
        {usage.data ? usage.data.credits.used : '…'}
      </p>
      <ErrorMessage error={catalog.error} />
      <form onSubmit={send}>
        {kind === 'ask' ? (
          <TextField label="Document id" path="id" value={documentId} onInput={setDocumentId} error={error} required />
        ) : null}
        {kind === 'chat' && history.length ? (
          <ol class="chat" aria-label="Conversation">
            {history.map((t) => (
              <li class={`turn-${t.role}`}>
                <strong>{t.role === 'user' ? 'You' : 'Model'}:</strong> {t.content}
              </li>
            ))}
          </ol>
        ) : null}
        <TextField
          label={kind === 'rag' ? 'Question' : kind === 'ask' ? 'Prompt' : 'Message'}
          path={kind === 'rag' ? 'query' : kind === 'ask' ? 'prompt' : 'messages'}
          value={question}
          onInput={setQuestion}
          error={error}
          multiline
          rows={3}
          required
        />
        <div class="grid2">
          <SelectField
            label="Model"
            path="model"
            value={model}
            onChange={setModel}
            error={error}
            options={[
              { value: '', label: `Default (${catalog.data?.defaultModel ?? '…'})` },
              ...models.map((x) => ({ value: x.id, label: `${x.name} (${x.provider})` })),
            ]}
          />
          {kind === 'rag' ? (
            <SelectField
              label="Retrieval mode"
              path="search.mode"
              value={mode}
              onChange={setMode}
              error={error}
              options={['HYBRID', 'TEXT', 'SEMANTIC']}
            />
          ) : null}
        </div>
        {error && !shownAtField(error, PATHS) ? <ErrorMessage error={error} /> : null}
        <div class="actions">
          <button type="submit" class="primary" disabled={streaming}>
            {streaming ? 'Answering…' : kind === 'chat' ? 'Send' : 'Ask'}
          </button>
          {streaming ? (
            <button type="button" onClick={() => stop.current?.()}>
              Stop
            </button>
          ) : null}
          {kind === 'chat' && history.length ? (
            <button type="button" onClick={() => setHistory([])}>
              New conversation
            </button>
          ) : null}
        </div>
      </form>
      <div class="answer-pane">
        <section aria-labelledby="answer-h">
          <h2 id="answer-h">Answer</h2>
          <div class="answer" aria-live="polite" aria-busy={streaming ? 'true' : 'false'} data-testid="answer">
            {answer || (streaming ? '…' : '')}
          </div>
          {done ? (
            <p class="cost">
              {done.model} · {done.inputTokens} tokens in, {done.outputTokens} out · {done.platformCreditsCharged}{' '}
              credits · {done.inferenceBalanceCentsCharged} cents of the balance
            </p>
          ) : null}
        </section>
        {kind !== 'chat' ? (
          <section aria-labelledby="passages-h">
            <h2 id="passages-h">{kind === 'rag' ? 'Retrieved passages' : 'The document'}</h2>
            {docContext ? (
              <p>
                <strong>{docContext.title}</strong> <code>{docContext.documentId}</code> · {docContext.textBytes} bytes
                of text
              </p>
            ) : null}
            {passages ? (
              passages.length ? (
                <ol class="hits" aria-label="Retrieved passages">
                  {passages.map((p) => (
                    <li>
                      <p class="hit-head">
                        <strong>{title(p)}</strong> · score {p.score.toFixed(4)}
                      </p>
                      <p>
                        <Snippet text={p.snippet ?? p.chunkText} />
                      </p>
                    </li>
                  ))}
                </ol>
              ) : (
                <p class="empty">No passage matched.</p>
              )
            ) : null}
          </section>
        ) : null}
      </div>
      <details>
        <summary>Model catalog</summary>
        <table>
          <caption>Models</caption>
          <thead>
            <tr>
              <th scope="col">Id</th>
              <th scope="col">Provider</th>
              <th scope="col">Context window</th>
              <th scope="col">Credits per 1k in / out</th>
              <th scope="col">Plans</th>
            </tr>
          </thead>
          <tbody>
            {models.map((x) => (
              <tr>
                <td>
                  <code>{x.id}</code>
                  {x.id === catalog.data?.defaultModel ? ' (default)' : ''}
                </td>
                <td>{x.provider}</td>
                <td>{x.contextWindow}</td>
                <td>
                  {x.inputCreditsPer1kTokens} / {x.outputCreditsPer1kTokens}
                </td>
                <td>{x.availableOn.join(', ')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </section>
  );
}
