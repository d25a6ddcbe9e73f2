// A vitest reporter for tests/run.mjs: appends each test file's results to the JSON-lines file named by
// VITEST_FILE_RESULTS as soon as the file ends. When a test process dies (a V8 fatal error kills the worker and,
// with it, vitest's whole run, before its JSON report is written), what finished is still known.
import { appendFileSync } from 'node:fs';

export default class FileResultsReporter {
  onTestModuleEnd(testModule) {
    const out = process.env.VITEST_FILE_RESULTS;
    if (!out) return;
    const tests = [...testModule.children.allTests()].map((t) => ({ fullName: t.fullName, status: t.result().state }));
    appendFileSync(out, JSON.stringify({ file: testModule.moduleId, tests }) + '\n');
  }
}
