import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, exportSPKI, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';

export type SigningAlg = 'RS256' | 'ES256' | 'EdDSA';

interface Key {
  alg: SigningAlg;
  privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
  publicJwk: JWK;
  /** The public key as PEM (SPKI): what an HMAC-confusion attack uses as its secret. */
  publicPem: string;
}

/**
 * A local OpenID Connect issuer for the tests: serves its discovery document and its JSON Web Key Set over
 * http on loopback, signs tokens with keys made by jose, and records every path it was asked for.
 */
export class LocalIssuer {
  readonly requests: string[] = [];
  /** While set, every request is answered 503 (a provider that is down). */
  failing = false;
  private readonly keys = new Map<string, Key>();
  private readonly published = new Set<string>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<LocalIssuer> {
    let self: LocalIssuer | undefined;
    const server = createServer((req, res) => self!.answer(req.url ?? '/', res));
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    self = new LocalIssuer(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return self;
  }

  get jwksUrl(): string {
    return `${this.url}/jwks`;
  }

  private answer(path: string, res: import('node:http').ServerResponse) {
    this.requests.push(path);
    if (this.failing) return void res.writeHead(503).end();
    const json = (body: unknown) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (path === '/.well-known/openid-configuration')
      return json({
        issuer: this.url,
        jwks_uri: this.jwksUrl,
        id_token_signing_alg_values_supported: ['RS256', 'ES256', 'EdDSA'],
      });
    if (path === '/jwks') return json({ keys: [...this.published].map((kid) => this.keys.get(kid)!.publicJwk) });
    res.writeHead(404).end();
  }

  /** Makes a key pair and publishes its public half in the key set; returns its `kid`. */
  async addKey(alg: SigningAlg, kid = `${alg.toLowerCase()}-${this.keys.size + 1}`): Promise<string> {
    const { privateKey, publicKey } = await generateKeyPair(alg, alg === 'EdDSA' ? { crv: 'Ed25519' } : {});
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
    this.keys.set(kid, { alg, privateKey, publicJwk, publicPem: await exportSPKI(publicKey) });
    this.published.add(kid);
    return kid;
  }

  /** Takes a key out of the published key set (it still signs: the service must stop accepting it). */
  unpublish(kid: string): void {
    this.published.delete(kid);
  }

  publicPem(kid: string): string {
    return this.keys.get(kid)!.publicPem;
  }

  /**
   * A token signed with key `kid`: `iss` this issuer, `iat` now, `exp` in 10 minutes unless `claims` say otherwise
   * (a claim set to undefined is left out).
   */
  async sign(kid: string, claims: JWTPayload & Record<string, unknown>): Promise<string> {
    const key = this.keys.get(kid)!;
    const now = Math.floor(Date.now() / 1000);
    const payload = Object.fromEntries(
      Object.entries({ iss: this.url, iat: now, exp: now + 600, ...claims }).filter(([, v]) => v !== undefined),
    );
    return new SignJWT(payload).setProtectedHeader({ alg: key.alg, kid, typ: 'JWT' }).sign(key.privateKey);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((ok) => this.server.close(() => ok()));
  }
}
