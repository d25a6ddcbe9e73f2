// A table of one page of a list, with the API's cursor paging: "Next page" sends the page's nextCursor back as
// startFrom; "Previous page" goes back through the cursors already seen (the API pages forward only).
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { asApiError, type ApiError } from '../api';
import { ErrorMessage } from './errors';

export interface Column<T> {
  label: string;
  cell: (row: T) => ComponentChildren;
}

export interface Page<T> {
  data: T[];
  nextCursor: string | null;
}

export function PagedTable<T>(p: {
  caption: string;
  columns: Column<T>[];
  /**
   * One page from `cursor` (undefined: the first). Changing the function (a new filter) starts again at the first page.
   */
  load: (cursor: string | undefined) => Promise<Page<T>>;
  empty?: string;
  rowKey: (row: T) => string;
  /** Bumped to reload the page shown (live updates), keeping the cursor. */
  refresh?: number;
}) {
  const [cursors, setCursors] = useState<Array<string | undefined>>([undefined]);
  const [page, setPage] = useState<Page<T>>();
  const [error, setError] = useState<ApiError>();
  const [loading, setLoading] = useState(true);
  const at = cursors.length - 1;

  useEffect(() => setCursors([undefined]), [p.load]);
  useEffect(() => {
    let live = true;
    setLoading(true);
    p.load(cursors[at]).then(
      (pg) => live && (setPage(pg), setError(undefined), setLoading(false)),
      (e) => live && (setError(asApiError(e)), setLoading(false)),
    );
    return () => void (live = false);
  }, [cursors, p.load, p.refresh]);

  return (
    <div class="paged-table" aria-busy={loading ? 'true' : 'false'}>
      <ErrorMessage error={error} />
      <table>
        <caption>
          {p.caption}
          {at > 0 ? ` (page ${at + 1})` : ''}
        </caption>
        <thead>
          <tr>
            {p.columns.map((c) => (
              <th scope="col">{c.label}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {page?.data.length
            ? page.data.map((row) => (
                <tr key={p.rowKey(row)}>
                  {p.columns.map((c) => (
                    <td>{c.cell(row)}</td>
                  ))}
                </tr>
              ))
            : !loading && (
                <tr>
                  <td colSpan={p.columns.length} class="empty">
                    {p.empty ?? 'Nothing here yet.'}
                  </td>
                </tr>
              )}
        </tbody>
      </table>
      <nav class="pager" aria-label={`${p.caption}: pages`}>
        <button type="button" disabled={at === 0 || loading} onClick={() => setCursors(cursors.slice(0, -1))}>
          Previous page
        </button>
        <button
          type="button"
          disabled={!page?.nextCursor || loading}
          onClick={() => setCursors([...cursors, page!.nextCursor!])}
        >
          Next page
        </button>
      </nav>
    </div>
  );
}
