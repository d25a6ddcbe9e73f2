// Types of models.mjs (plain JavaScript: the install step and the model thread run it without a TypeScript loader).
export interface ModelSpec {
  readonly name: string;
  readonly dims: number;
  readonly maxTokens: number;
  readonly queryInstruction: string;
  readonly maven: {
    readonly group: string;
    readonly artifact: string;
    readonly version: string;
    readonly sha256: string;
    readonly bytes: number;
  };
  readonly entries: Readonly<Record<string, string>>;
}
export declare const BGE_SMALL_Q: ModelSpec;
export declare const MAVEN_DEFAULT: string;
export declare function modelCacheDir(env?: NodeJS.ProcessEnv): string;
export declare function modelDir(spec?: ModelSpec, env?: NodeJS.ProcessEnv): string;
export declare function jarUrl(spec?: ModelSpec, base?: string): string;
export declare function installedModel(
  spec?: ModelSpec,
  env?: NodeJS.ProcessEnv,
): { ok: true; dir: string } | { ok: false; dir: string; reason: string };
