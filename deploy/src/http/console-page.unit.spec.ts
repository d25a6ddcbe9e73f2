import { describe, expect, it } from 'vitest';
import { roleOf } from './router-config';
import { consoleCsp, consoleUploadOrigins } from './console-page';

describe('the web console (/console)', () => {
  it('goes through the router to a role that serves it: the page and its files, nothing else under /console', () => {
    for (const url of ['/console', '/console/app-ABCDEFGH.js', '/console/console.css', '/console?x=1']) {
      expect(roleOf('GET', url), url).toBe('query');
      expect(roleOf('HEAD', url), url).toBe('query');
    }
    expect(roleOf('GET', '/console/a/b.js')).toBe('command');
  });

  it('allows only the service itself, and the object store that takes presigned uploads when there is one', () => {
    expect(consoleCsp()).not.toMatch(/https?:|\*|unsafe/);
    expect(consoleUploadOrigins(undefined)).toEqual([]);
    expect(consoleUploadOrigins('s3://k:s@minio:9000/bucket?forcePathStyle=true&tls=false')).toEqual([
      'http://minio:9000',
    ]);
    expect(consoleUploadOrigins('s3://k:s@s3.example.com/files')).toEqual([
      'https://s3.example.com',
      'https://files.s3.example.com',
    ]);
    expect(consoleCsp(consoleUploadOrigins('s3://k:s@minio:9000/b?forcePathStyle=true&tls=false'))).toContain(
      "connect-src 'self' http://minio:9000;",
    );
  });
});
