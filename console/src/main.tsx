// The console's shell: sign-in, then the navigation of the screens the credential can use and the screen of the
// current route (loaded on first use). Focus moves to the screen's heading on every change of screen, so keyboard and
// screen-reader users land on the new content.
import { render, type ComponentType } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ClientContext, clientFor } from './api';
import { SCREENS, homeOf, type ScreenProps } from './screens/registry';
import { clearSession, loadSession, saveSession, type Session } from './session';
import { href, navigate, useRoute } from './router';
import { SignIn } from './signin';

const loaded = new Map<string, ComponentType<ScreenProps>>();

function Screen({ name, params, query }: { name: string } & ScreenProps) {
  const entry = SCREENS.find((s) => s.name === name);
  const [C, setC] = useState<ComponentType<ScreenProps> | undefined>(() => loaded.get(name));
  const [failed, setFailed] = useState<string>();
  useEffect(() => {
    if (!entry || loaded.has(name)) return setC(() => loaded.get(name));
    setC(undefined);
    entry.load().then(
      (m) => (loaded.set(name, m.default), setC(() => m.default)),
      (e) => setFailed(String(e)),
    );
  }, [name]);
  if (!entry) return <p>There is no screen “{name}”.</p>;
  if (failed) return <p role="alert">The screen could not be loaded: {failed}</p>;
  if (!C) return <p aria-busy="true">Loading…</p>;
  return <C params={params} query={query} />;
}

function Shell({
  session,
  onSignOut,
  focusOnMount,
}: {
  session: Session;
  onSignOut: () => void;
  focusOnMount: boolean;
}) {
  const route = useRoute();
  const client = useMemo(() => clientFor(session), [session]);
  const screens = SCREENS.filter((s) => s.credential === session.kind);
  const current = screens.some((s) => s.name === route.screen) ? route.screen : homeOf(session.kind)?.name;
  const main = useRef<HTMLElement>(null);
  useEffect(() => {
    if (current && route.screen !== current) navigate(href(current));
  }, [current, route.screen]);
  // A new screen (or the first one right after signing in): focus moves to its heading, once it is there (a screen's
  // code loads on first use). Not on a page load: the page's own first stop (the skip link) stays first.
  const first = useRef(!focusOnMount);
  useEffect(() => {
    if (first.current) return void (first.current = false);
    let tries = 40;
    let t: ReturnType<typeof setTimeout>;
    const focus = () => {
      const h = main.current?.querySelector('h1');
      if (h) ((h.tabIndex = -1), h.focus());
      else if (tries-- > 0) t = setTimeout(focus, 50);
    };
    t = setTimeout(focus, 0);
    return () => clearTimeout(t);
  }, [current, route.params.join('/')]);
  return (
    <ClientContext.Provider value={client}>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), main.current?.focus())}>
        Skip to the content
      </a>
      <header class="top">
        <span class="brand">Console</span>
        <span class="who">
          {session.kind === 'developer'
            ? 'Developer token'
            : `Tenant ${session.tenantId ?? ''} (${session.livemode ? 'live' : 'test'}) · context ` +
              `${session.actingContextId ?? ''}`}
        </span>
        <button type="button" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <nav class="side" aria-label="Screens">
        <ul>
          {screens.map((s) => (
            <li>
              <a href={href(s.name)} aria-current={s.name === current ? 'page' : undefined}>
                {s.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" ref={main} tabIndex={-1}>
        {current ? (
          <Screen name={current} params={route.params} query={route.query} />
        ) : (
          <p>No screen works with this credential.</p>
        )}
      </main>
    </ClientContext.Provider>
  );
}

function App() {
  const [session, setSession] = useState(loadSession);
  const [signedInHere, setSignedInHere] = useState(false);
  if (!session)
    return (
      <SignIn
        onSignedIn={(s) => {
          saveSession(s);
          setSignedInHere(true);
          setSession(s);
        }}
      />
    );
  return (
    <Shell
      focusOnMount={signedInHere}
      session={session}
      onSignOut={() => {
        clearSession();
        setSession(undefined);
        history.replaceState(null, '', location.pathname);
      }}
    />
  );
}

// The page's "Loading" line goes: render() would keep it beside the app.
const root = document.getElementById('app')!;
root.textContent = '';
render(<App />, root);
