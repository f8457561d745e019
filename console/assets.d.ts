/**
 * The console's bundle as the server imports it (`#console-assets`, package.json "imports"): the
 * script and the style sheet, each with its entity tag. scripts/bundle-console.ts builds it from
 * this folder into build/console/assets.js; this declaration is what the server type-checks
 * against, so a fresh clone type-checks before anything is built.
 */
export declare const script: string;
export declare const style: string;
export declare const scriptTag: string;
export declare const styleTag: string;
