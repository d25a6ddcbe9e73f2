// Search results name a document by id only; a person reads titles. The titles of the documents shown are read once
// each (GET /v1/documents/{id}) and kept for the screen's life; a record is shown by its type and id.
import { useEffect, useState } from 'preact/hooks';
import { unwrap, useClient } from '../api';

interface Hit {
  documentId: string;
  sourceType: 'PartnerDocument' | 'GenericRecord';
  typeName: string | null;
}

export function useTitles(hits: Hit[]): (h: Hit) => string {
  const client = useClient();
  const [titles, setTitles] = useState<Record<string, string>>({});
  const missing = [
    ...new Set(
      hits.filter((h) => h.sourceType === 'PartnerDocument' && !(h.documentId in titles)).map((h) => h.documentId),
    ),
  ];
  useEffect(() => {
    if (!missing.length) return;
    let live = true;
    Promise.all(
      missing.map((id) =>
        unwrap(client.GET('/v1/documents/{id}', { params: { path: { id } } })).then(
          (d) => [id, d.title ?? id] as const,
          () => [id, id] as const,
        ),
      ),
    ).then((pairs) => live && setTitles((t) => ({ ...t, ...Object.fromEntries(pairs) })));
    return () => void (live = false);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [missing.join(',')]);
  return (h) =>
    h.sourceType === 'PartnerDocument'
      ? (titles[h.documentId] ?? h.documentId)
      : `${h.typeName ?? 'record'} ${h.documentId}`;
}
