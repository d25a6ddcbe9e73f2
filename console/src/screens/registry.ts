// The console's screens, in the order of the navigation. Adding a screen: write screens/<name>.tsx with a default
// export taking ScreenProps, and add one entry here. Each is loaded when first opened (its own chunk), so the first
// screen's download does not grow with the number of screens.
import type { ComponentType } from 'preact';
import type { CredentialKind } from '../session';
import type { ScreenProps } from './screen-props';

export type { ScreenProps };

export interface ScreenEntry {
  /** The first segment of its route (#/<name>/...). */
  name: string;
  label: string;
  /** Which credential the screen works with: a tenant's key or token, or the developer token. */
  credential: CredentialKind;
  load: () => Promise<{ default: ComponentType<ScreenProps> }>;
}

export const SCREENS: ScreenEntry[] = [
  { name: 'schemas', label: 'Schemas', credential: 'tenant', load: () => import('./schemas') },
  { name: 'records', label: 'Records', credential: 'tenant', load: () => import('./records') },
  { name: 'documents', label: 'Documents', credential: 'tenant', load: () => import('./documents') },
  { name: 'search', label: 'Search playground', credential: 'tenant', load: () => import('./search') },
  { name: 'ask', label: 'Ask and chat', credential: 'tenant', load: () => import('./ask') },
  { name: 'scripts', label: 'Scripts and triggers', credential: 'tenant', load: () => import('./scripts') },
  { name: 'tokens', label: 'Tokens', credential: 'tenant', load: () => import('./tokens') },
  { name: 'usage', label: 'Usage and activity', credential: 'tenant', load: () => import('./usage') },
  { name: 'developer', label: 'Developer portal', credential: 'developer', load: () => import('./developer') },
];

/** The screen a person lands on after signing in with a credential of this kind. */
export const homeOf = (kind: CredentialKind): ScreenEntry | undefined => SCREENS.find((s) => s.credential === kind);
