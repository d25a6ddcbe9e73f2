// Types of pglite-template.mjs (plain JavaScript: the install step runs it without a TypeScript loader).
export declare const pgliteTemplateRoot: (env?: NodeJS.ProcessEnv) => string;
export declare function pgliteTemplate(root?: string, wasm?: unknown): Promise<string | undefined>;
export declare function seedPgliteDataDir(dataDir: string, wasm?: unknown): Promise<void>;
