// Documents and folders: the folders of the context, the documents of one, an upload (drag and drop or a file
// input) through the presigned URL with its progress, a document's status moving from PENDING to INDEXED (or FAILED
// with the reason), its retained text, and moving it to another folder. Every call is the public API's; the upload's
// PUT goes to the URL the API handed out (XMLHttpRequest: fetch cannot report upload progress).
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { Answer } from '@svc/client';
import { ApiError, asApiError, unwrap, useClient, useLoad } from '../api';
import { ErrorMessage, shownAtField } from '../components/errors';
import { CheckField, SelectField, TextField } from '../components/fields';
import { PagedTable } from '../components/paged-table';
import { useChanges, useThrottledTick } from '../live';
import { href, navigate } from '../router';
import type { ScreenProps } from './screen-props';

type Folder = Answer<'getFolder'>;
type DocumentView = Answer<'getDocument'>;

/** Statuses a document stays in: the page stops polling there. */
const SETTLED: DocumentView['status'][] = ['INDEXED', 'SKIPPED', 'STORED', 'FAILED'];

export default function Documents({ params, query }: ScreenProps) {
  const [first, id] = params;
  if (first === 'doc' && id) return <DocumentPage id={id} />;
  return <FolderPage folderId={query.get('folder') ?? undefined} />;
}

function useFolders() {
  return useLoad(async (c) => {
    const out: Folder[] = [];
    for await (const f of c.paginate('/v1/folders', { query: { limit: 100 } })) out.push(f as Folder);
    return out;
  }, []);
}

/** Folders as "Root / Invoices / 2026", for lists and selects. */
function pathsOf(folders: Folder[]): Map<string, string> {
  const byId = new Map(folders.map((f) => [f.id, f]));
  const out = new Map<string, string>();
  const pathOf = (f: Folder, depth = 0): string => {
    const parent = f.parentFolderId ? byId.get(f.parentFolderId) : undefined;
    return parent && depth < 64 ? `${pathOf(parent, depth + 1)} / ${f.name}` : f.name;
  };
  for (const f of folders) out.set(f.id, pathOf(f));
  return out;
}

function FolderPage({ folderId }: { folderId?: string }) {
  const client = useClient();
  const folders = useFolders();
  const all = folders.data ?? [];
  const paths = useMemo(() => pathsOf(all), [all]);
  const root = all.find((f) => !f.parentFolderId);
  const current = all.find((f) => f.id === folderId) ?? root;
  const [version, setVersion] = useState(0);
  // Live: a document change (an upload elsewhere, a status moving on, a move) reloads the page shown.
  const [refresh, bump] = useThrottledTick(500);
  useChanges(bump, { entities: ['documents'] });
  const load = useCallback(
    (startFrom?: string) =>
      unwrap(
        client.GET('/v1/documents', {
          params: {
            query: { ...(current ? { folderId: current.id } : {}), limit: 20, ...(startFrom ? { startFrom } : {}) },
          },
        }),
      ),
    [client, current?.id, version],
  );
  return (
    <section>
      <h1>Documents</h1>
      <ErrorMessage error={folders.error} />
      <div class="two-pane">
        <nav aria-label="Folders" class="folders">
          <h2>Folders</h2>
          <ul>
            {[...all]
              .sort((a, b) => (paths.get(a.id) ?? '').localeCompare(paths.get(b.id) ?? ''))
              .map((f) => (
                <li>
                  <a
                    href={`${href('documents')}?folder=${f.id}`}
                    aria-current={f.id === current?.id ? 'page' : undefined}
                  >
                    {paths.get(f.id)}
                  </a>
                </li>
              ))}
          </ul>
          {current ? (
            <NewFolder
              parent={current}
              onCreated={(f) => (folders.reload(), navigate(`${href('documents')}?folder=${f.id}`))}
            />
          ) : null}
        </nav>
        <div>
          {current ? (
            <>
              <h2>In {paths.get(current.id)}</h2>
              <Upload
                folder={current}
                onUploaded={(d) => (setVersion(version + 1), navigate(href('documents', 'doc', d.id)))}
              />
              <PagedTable<DocumentView>
                caption={`Documents in ${paths.get(current.id)}`}
                load={load}
                refresh={refresh}
                rowKey={(d) => d.id}
                empty="No document in this folder."
                columns={[
                  { label: 'Title', cell: (d) => <a href={href('documents', 'doc', d.id)}>{d.title}</a> },
                  { label: 'Status', cell: (d) => <span class={`status status-${d.status}`}>{d.status}</span> },
                  { label: 'Type', cell: (d) => d.fileType ?? 'text' },
                  { label: 'Size', cell: (d) => sizeOf(d.fileSize) },
                  { label: 'Changed', cell: (d) => d.lastModified },
                ]}
              />
            </>
          ) : null}
        </div>
      </div>
    </section>
  );
}

const sizeOf = (n: number | null | undefined) =>
  n === null || n === undefined
    ? ''
    : n < 1024
      ? `${n} B`
      : n < 1024 * 1024
        ? `${(n / 1024).toFixed(1)} KB`
        : `${(n / 1024 / 1024).toFixed(1)} MB`;

function NewFolder({ parent, onCreated }: { parent: Folder; onCreated: (f: Folder) => void }) {
  const client = useClient();
  const [name, setName] = useState('');
  const [error, setError] = useState<ApiError>();
  async function submit(e: Event) {
    e.preventDefault();
    setError(undefined);
    try {
      const f = await unwrap(client.POST('/v1/folders', { body: { name, parentFolderId: parent.id } }));
      setName('');
      onCreated(f as Folder);
    } catch (x) {
      setError(asApiError(x));
    }
  }
  return (
    <form onSubmit={submit} aria-label="New folder" noValidate>
      <TextField label={`New folder in ${parent.name}`} path="name" value={name} onInput={setName} error={error} />
      {shownAtField(error, ['name']) ? null : <ErrorMessage error={error} />}
      <button type="submit">Create folder</button>
    </form>
  );
}

/** PUTs the file to the presigned URL, reporting progress (0..1). */
function putFile(
  url: string,
  file: File,
  headers: Record<string, string>,
  onProgress: (f: number) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', url);
    for (const [k, v] of Object.entries(headers)) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) return resolve();
      let body: unknown = xhr.responseText;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        /* not JSON */
      }
      reject(new ApiError(xhr.status, body, xhr.getResponseHeader('x-request-id')));
    };
    xhr.onerror = () => reject(asApiError(new Error('The upload could not reach the storage endpoint')));
    xhr.send(file);
  });
}

function Upload({ folder, onUploaded }: { folder: Folder; onUploaded: (d: DocumentView) => void }) {
  const client = useClient();
  const [file, setFile] = useState<File>();
  const [title, setTitle] = useState('');
  const [indexMode, setIndexMode] = useState('HYBRID');
  const [storeText, setStoreText] = useState(true);
  const [progress, setProgress] = useState<number>();
  const [error, setError] = useState<ApiError>();
  const [over, setOver] = useState(false);
  const input = useRef<HTMLInputElement>(null);

  const choose = (f: File | undefined) => {
    if (!f) return;
    setFile(f);
    setError(undefined);
    if (!title) setTitle(f.name.replace(/\.[^.]+$/, ''));
  };

  async function submit(e: Event) {
    e.preventDefault();
    if (!file) return;
    setError(undefined);
    setProgress(0);
    try {
      const created = await unwrap(
        client.POST('/v1/documents/upload', {
          body: {
            title,
            fileName: file.name,
            fileType: file.type || 'application/octet-stream',
            indexMode: indexMode as 'HYBRID',
            storeText,
            folderId: folder.id,
          },
        }),
      );
      await putFile(
        created.uploadUrl,
        file,
        {
          'content-type': file.type || 'application/octet-stream',
          [created.requiredHeaderName]: created.requiredHeaderValue,
        },
        setProgress,
      );
      setProgress(1);
      const doc = await unwrap(client.GET('/v1/documents/{id}', { params: { path: { id: created.id } } }));
      setFile(undefined);
      setTitle('');
      onUploaded(doc);
    } catch (x) {
      setError(asApiError(x));
      setProgress(undefined);
    }
  }

  return (
    <form onSubmit={submit} aria-label="Upload a document" noValidate class="upload">
      <div
        class={`dropzone${over ? ' over' : ''}`}
        data-testid="dropzone"
        onDragOver={(e) => (e.preventDefault(), setOver(true))}
        onDragLeave={() => setOver(false)}
        onDrop={(e) => {
          e.preventDefault();
          setOver(false);
          choose(e.dataTransfer?.files[0]);
        }}
      >
        <p>
          {file
            ? `${file.name} (${sizeOf(file.size)}, ${file.type || 'unknown type'})`
            : 'Drop a file here, or choose one:'}
        </p>
        <label for="upload-file">Choose a file</label>{' '}
        <input
          id="upload-file"
          ref={input}
          type="file"
          onChange={(e) => choose((e.currentTarget as HTMLInputElement).files?.[0])}
        />
      </div>
      <div class="field-row">
        <TextField label="Title" path="title" value={title} onInput={setTitle} error={error} required />
        <SelectField
          label="Index mode"
          path="indexMode"
          value={indexMode}
          onChange={setIndexMode}
          error={error}
          options={['HYBRID', 'SEMANTIC', 'TEXT', 'NONE']}
        />
        <CheckField
          label="Keep the extracted text"
          path="storeText"
          checked={storeText}
          onChange={setStoreText}
          error={error}
        />
      </div>
      {progress !== undefined ? (
        <div class="field">
          <label for="upload-progress">Upload progress</label>
          <progress id="upload-progress" max={1} value={progress}>
            {Math.round(progress * 100)}%
          </progress>
        </div>
      ) : null}
      {shownAtField(error, ['title', 'indexMode', 'storeText']) ? null : <ErrorMessage error={error} />}
      <button type="submit" class="primary" disabled={!file || (progress !== undefined && progress < 1)}>
        Upload
      </button>
    </form>
  );
}

function DocumentPage({ id }: { id: string }) {
  const client = useClient();
  const doc = useLoad((c) => unwrap(c.GET('/v1/documents/{id}', { params: { path: { id } } })), [id]);
  const folders = useFolders();
  const paths = useMemo(() => pathsOf(folders.data ?? []), [folders.data]);
  const [text, setText] = useState<{ text: string; textBytes: number }>();
  const [textError, setTextError] = useState<ApiError>();
  const [target, setTarget] = useState('');
  const [moveError, setMoveError] = useState<ApiError>();
  const [moved, setMoved] = useState<string>();
  const d = doc.data;

  // Until the document settles, read it again every second: the status moves as the service processes it.
  useEffect(() => {
    if (!d || SETTLED.includes(d.status)) return;
    const t = setTimeout(doc.reload, 1000);
    return () => clearTimeout(t);
  }, [d]);

  async function readText() {
    setTextError(undefined);
    try {
      setText(await unwrap(client.GET('/v1/documents/{id}/text', { params: { path: { id } } })));
    } catch (x) {
      setTextError(asApiError(x));
    }
  }

  async function move(e: Event) {
    e.preventDefault();
    if (!d) return;
    setMoveError(undefined);
    try {
      const after = await unwrap(
        client.PATCH('/v1/documents/{id}', {
          params: { path: { id } },
          body: { folderId: target, expectedVersion: d.version },
        }),
      );
      setMoved(paths.get(after.folderId) ?? after.folderId);
      doc.reload();
    } catch (x) {
      setMoveError(asApiError(x));
    }
  }

  return (
    <section>
      <p class="crumbs">
        <a href={href('documents')}>Documents</a>
        {d ? (
          <>
            {' › '}
            <a href={`${href('documents')}?folder=${d.folderId}`}>{paths.get(d.folderId) ?? 'folder'}</a>
          </>
        ) : null}
      </p>
      <h1>{d ? `Document ${d.title}` : 'Document'}</h1>
      <ErrorMessage error={doc.error} />
      {d ? (
        <>
          <dl class="facts">
            <dt>Status</dt>
            <dd>
              <span role="status" aria-live="polite">
                <span class={`status status-${d.status}`}>{d.status}</span>
                {d.indexFailure ? (
                  <>
                    : {d.indexFailure.message} ({d.indexFailure.code})
                  </>
                ) : null}
              </span>
            </dd>
            <dt>File</dt>
            <dd>
              {d.fileType ?? 'text'} {sizeOf(d.fileSize)}
            </dd>
            <dt>Folder</dt>
            <dd>{paths.get(d.folderId) ?? d.folderId}</dd>
            <dt>Index mode</dt>
            <dd>{d.indexMode}</dd>
            <dt>Text kept</dt>
            <dd>{d.storeText ? `yes${d.textBytes !== null ? ` (${sizeOf(d.textBytes)})` : ''}` : 'no'}</dd>
            <dt>Version</dt>
            <dd>{d.version}</dd>
            <dt>Id</dt>
            <dd>
              <code>{d.id}</code>
            </dd>
          </dl>
          <h2>Text</h2>
          <p>
            <button type="button" onClick={readText}>
              Read the text
            </button>
          </p>
          <ErrorMessage error={textError} />
          {text ? <pre aria-label="Extracted text">{text.text}</pre> : null}
          <h2>Move</h2>
          <form onSubmit={move} aria-label="Move to a folder" noValidate>
            <SelectField
              label="Move to folder"
              path="folderId"
              value={target}
              onChange={setTarget}
              error={moveError}
              options={[
                { value: '', label: '(choose a folder)' },
                ...[...paths].filter(([fid]) => fid !== d.folderId).map(([fid, p]) => ({ value: fid, label: p })),
              ]}
            />
            {shownAtField(moveError, ['folderId']) ? null : <ErrorMessage error={moveError} />}
            <button type="submit" disabled={!target}>
              Move
            </button>
          </form>
          {moved ? (
            <p class="notice" role="status">
              Moved to {moved}.
            </p>
          ) : null}
        </>
      ) : null}
    </section>
  );
}
