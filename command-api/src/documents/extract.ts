import { convert as htmlToText } from 'html-to-text';
import mammoth from 'mammoth';
import { extractText as pdfText, getDocumentProxy } from 'unpdf';

/**
 * Text extraction from uploaded files, with the maintained libraries: unpdf
 * (PDF), mammoth (DOCX), html-to-text (HTML); text, markdown, CSV and JSON are
 * decoded as UTF-8. A type without an extractor yields `unsupported`; a file
 * the library cannot read throws (the worker records FAILED).
 */
export const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
/** Files above this are not extracted in memory (FAILED, or STORED for indexMode NONE). */
export const MAX_EXTRACT_BYTES = 20 * 1024 * 1024;

export const EXTRACTABLE_TYPES = ['text/plain', 'text/markdown', 'text/x-markdown', 'text/html', 'application/json', 'text/csv', 'application/pdf', DOCX_TYPE] as const;

export type Extraction = { kind: 'text'; text: string } | { kind: 'unsupported'; reason: string };

const baseType = (t: string) => t.split(';')[0].trim().toLowerCase();

export function canExtract(fileType: string): boolean {
  return (EXTRACTABLE_TYPES as readonly string[]).includes(baseType(fileType));
}

export async function extractText(fileType: string, data: Buffer): Promise<Extraction> {
  const type = baseType(fileType);
  switch (type) {
    case 'text/plain':
    case 'text/markdown':
    case 'text/x-markdown':
    case 'text/csv':
      return { kind: 'text', text: new TextDecoder('utf-8', { fatal: false }).decode(data) };
    case 'application/json':
      // Kept as written (keys and values are both searchable text).
      return { kind: 'text', text: new TextDecoder('utf-8').decode(data) };
    case 'text/html':
      return { kind: 'text', text: htmlToText(data.toString('utf8'), { wordwrap: false, selectors: [{ selector: 'a', options: { ignoreHref: true } }, { selector: 'img', format: 'skip' }] }) };
    case 'application/pdf': {
      // A copy: pdf.js transfers (detaches) the buffer it is given.
      const pdf = await getDocumentProxy(new Uint8Array(data));
      try {
        const { text } = await pdfText(pdf, { mergePages: true });
        return { kind: 'text', text };
      } finally {
        await pdf.destroy().catch(() => {});
      }
    }
    case DOCX_TYPE: {
      const { value } = await mammoth.extractRawText({ buffer: data });
      return { kind: 'text', text: value };
    }
    default:
      return { kind: 'unsupported', reason: `No text extractor for ${type}` };
  }
}
