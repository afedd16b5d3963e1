/**
 * The real S3-compatible server the object-storage tests run against (OpenStack Swift + s3api, started by
 * scripts/s3-server.sh; .ci/run starts it). Each test gets a bucket of its own, emptied and deleted after.
 *
 *   TEST_S3_ENDPOINT   default http://127.0.0.1:8080 (the script's default port)
 *   TEST_S3_ACCESS_KEY / TEST_S3_SECRET   default the script's test:tester / testing
 */
import { randomBytes } from 'node:crypto';
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  ListObjectsV2Command,
} from '@aws-sdk/client-s3';
import type { S3Client } from '@aws-sdk/client-s3';
import type { S3Settings } from '../../src/config.ts';
import { s3Client } from '../../src/store/s3-media-store.ts';
import { scaledBudget } from './budget.ts';

export const TEST_S3_ENDPOINT = process.env.TEST_S3_ENDPOINT ?? 'http://127.0.0.1:8080';
const ACCESS_KEY = process.env.TEST_S3_ACCESS_KEY ?? 'test:tester';
const SECRET = process.env.TEST_S3_SECRET ?? 'testing';

/** The AWS SDK's variables for the test server (an endpoint other than the server's may be given: a proxy). */
export function s3Env(bucket: string, endpoint = TEST_S3_ENDPOINT, prefix = ''): Record<string, string> {
  return {
    MEDIA_STORE: `s3://${bucket}${prefix ? `/${prefix}` : ''}`,
    AWS_ENDPOINT_URL: endpoint,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: ACCESS_KEY,
    AWS_SECRET_ACCESS_KEY: SECRET,
  };
}

export function testS3Settings(bucket: string, prefix = ''): S3Settings {
  return {
    bucket,
    prefix,
    endpoint: TEST_S3_ENDPOINT,
    region: 'us-east-1',
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET },
  };
}

/** Why the object-storage tests cannot run (the server does not answer), or null. */
export async function s3Unreachable(): Promise<string | null> {
  const client = s3Client(testS3Settings('none'), {
    connectTimeoutMs: scaledBudget(1000),
    requestTimeoutMs: scaledBudget(3000),
  });
  try {
    await client.send(new ListObjectsV2Command({ Bucket: 'pixvote-probe-none', MaxKeys: 1 })).catch((e: unknown) => {
      if ((e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode) return;
      throw e;
    });
    return null;
  } catch (e) {
    return (
      `needs the S3 test server, and none answers at ${TEST_S3_ENDPOINT} (${(e as Error).message}); ` +
      'start it with `bash scripts/s3-server.sh start` (PIXVOTE_REQUIRE_SERVICES=1 turns this skip into a failure)'
    );
  } finally {
    client.destroy();
  }
}

/**
 * The skip option for the object-storage suites: skipped (with the reason) when the server does not answer,
 * unless PIXVOTE_REQUIRE_SERVICES=1 (CI), where its absence fails them.
 */
export async function s3Skip(): Promise<string | false> {
  const why = await s3Unreachable();
  if (why && process.env.PIXVOTE_REQUIRE_SERVICES === '1') throw new Error(`PIXVOTE_REQUIRE_SERVICES=1: ${why}`);
  return why ?? false;
}

export interface TestBucket {
  name: string;
  client: S3Client;
  settings: S3Settings;
  env(endpoint?: string, prefix?: string): Record<string, string>;
  /** Every object key in the bucket. */
  keys(): Promise<string[]>;
  drop(): Promise<void>;
}

export async function createTestBucket(): Promise<TestBucket> {
  const name = `pvtest-${randomBytes(6).toString('hex')}`;
  const settings = testS3Settings(name);
  const client = s3Client(settings);
  await client.send(new CreateBucketCommand({ Bucket: name }));
  const keys = async () => {
    const out: string[] = [];
    let token: string | undefined;
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: name, ContinuationToken: token }));
      for (const o of page.Contents ?? []) if (o.Key) out.push(o.Key);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out;
  };
  return {
    name,
    client,
    settings,
    env: (endpoint, prefix) => s3Env(name, endpoint, prefix),
    keys,
    async drop() {
      for (const key of await keys()) await client.send(new DeleteObjectCommand({ Bucket: name, Key: key }));
      await client.send(new DeleteBucketCommand({ Bucket: name }));
      client.destroy();
    },
  };
}
