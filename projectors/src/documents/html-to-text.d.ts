// html-to-text ships no type declarations: the one function used here.
declare module 'html-to-text' {
  export function convert(html: string, options?: Record<string, unknown>): string;
}
