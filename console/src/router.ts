// Hash routes (#/schemas/note): the service serves one page at /console whatever the screen, and a reload or a shared
// link opens the same screen. A route is the screen's name, then its own segments.
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  screen: string;
  params: string[];
  query: URLSearchParams;
}

export function parseHash(hash: string): Route {
  const [path, q = ''] = hash.replace(/^#\/?/, '').split('?');
  const [screen = '', ...params] = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { screen, params, query: new URLSearchParams(q) };
}

/** The href of a route: `href('records', 'note', id)`. */
export const href = (screen: string, ...params: string[]): string =>
  `#/${[screen, ...params].map(encodeURIComponent).join('/')}`;

export function navigate(to: string): void {
  location.hash = to.startsWith('#') ? to : `#${to}`;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseHash(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}
