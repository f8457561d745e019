/**
 * A store URL as the start-up line may print it: credentials removed, wherever they sit. A URL can
 * carry them as userinfo (`https://user:pass@host`), as query parameters (an Azure SAS `sig=`, S3
 * presigned `X-Amz-Signature=`, `token=`, `key=`), or percent-encoded inside another parameter
 * (`?endpoint=https%3A%2F%2Fuser%3Apass%40host`): each is replaced by `***`, the rest kept, so an
 * operator still sees which store it is. Runtime-neutral.
 */

const SECRET_PARAMS = [
  "sig",
  "signature",
  "x-amz-signature",
  "x-amz-credential",
  "x-amz-security-token",
  "token",
  "sastoken",
  "sas",
  "key",
  "accountkey",
  "access_key",
  "accesskey",
  "secret",
  "secretkey",
  "password",
  "pass",
  "pwd",
  "credential",
  "credentials",
  "sharedaccesssignature",
];

/** `//userinfo@` (or its percent-encoded form inside a parameter) */
const USERINFO = /(\/\/|%2F%2F)([^/?#&@%]|%(?!40)[0-9A-F]{2})+(@|%40)/gi;
/** `name=value` of a secret parameter: after ?, &, ; (raw or percent-encoded), up to the next separator. */
const PARAM = new RegExp(
  `((?:^|[?&;]|%3F|%26|%3B)(?:${SECRET_PARAMS.join("|")})(?:=|%3D))((?:(?!%26|%3B)[^&;#])*)`,
  "gi",
);

export function redactUrl(text: string): string {
  return text
    .replace(USERINFO, "$1***$3")
    .replace(PARAM, (_m, name: string, value: string) => (value === "" ? name : `${name}***`));
}
