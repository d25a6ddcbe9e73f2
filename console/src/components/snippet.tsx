// A search snippet as the API gives it: plain text with the matched words between <mark> and </mark>, not
// HTML-escaped. Rendered as text nodes and <mark> elements, never as HTML, so a record's own markup cannot run.
export function Snippet({ text }: { text: string }) {
  const parts = text.split(/(<mark>[\s\S]*?<\/mark>)/g);
  return (
    <span class="snippet">
      {parts.map((p) => (p.startsWith('<mark>') && p.endsWith('</mark>') ? <mark>{p.slice(6, -7)}</mark> : p))}
    </span>
  );
}
