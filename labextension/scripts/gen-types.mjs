/**
 * src/protocol.gen.ts from schema/protocol.schema.json (json-schema-to-typescript, then this
 * package's prettier style). With --check it only compares, and fails when the committed file
 * differs from what the schema gives, so the two cannot drift.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { compileFromFile } from 'json-schema-to-typescript';
import prettier from 'prettier';

const root = fileURLToPath(new URL('..', import.meta.url));
const schema = `${root}schema/protocol.schema.json`;
const target = `${root}src/protocol.gen.ts`;
const banner = `/* Generated from schema/protocol.schema.json by scripts/gen-types.mjs
   (npm run build:types): do not edit; change the schema and regenerate. */`;

const compiled = await compileFromFile(schema, {
  bannerComment: banner,
  additionalProperties: false,
  unreachableDefinitions: true,
  format: false
});
const options = (await prettier.resolveConfig(target)) ?? {};
const text = await prettier.format(compiled, { ...options, filepath: target });

if (process.argv.includes('--check')) {
  const committed = await readFile(target, 'utf8').catch(() => '');
  if (committed !== text) {
    console.error(
      'src/protocol.gen.ts is not what schema/protocol.schema.json gives: run npm run build:types'
    );
    process.exit(1);
  }
  console.log('src/protocol.gen.ts matches schema/protocol.schema.json');
} else {
  await writeFile(target, text);
}
