/** What every screen gets from the shell (a screen imports this, never the registry, which imports the screens). */
export interface ScreenProps {
  /** The route's segments after the screen's name (#/records/note/<id> → ['note', '<id>']). */
  params: string[];
  query: URLSearchParams;
}
