import { InProcessWindowCounter } from '@svc/command-api';
import { windowCounterContract } from './window-counter.contract';

windowCounterContract('in process (embedded default)', async () => new InProcessWindowCounter());
