import { describe } from 'vitest';
import { loadKurrentDb } from '@svc/deploy';
import { serverUrl } from '../support/engines';
import { eventStoreContract } from './event-store.contract';

// Needs a KurrentDB 25.1+ server (multi-stream append), e.g. EVENTSTORE_URL=kurrentdb://127.0.0.1:2113?tls=false
const { KurrentDbEventStore } = await loadKurrentDb();
const url = serverUrl('eventstore');
if (!url) describe.skip('event store contract: KurrentDB (EVENTSTORE_URL not set)', () => {});
else eventStoreContract('KurrentDB', () => KurrentDbEventStore.open(url));
