import type { EventMetadata } from '@svc/contracts';
import { type DocumentProcessingCommand, documentProcessingDecider } from '../documents/processing';
import type { DocumentState } from '../documents/document';
import { streams } from '../shared/streams';
import type { DomainAppend } from './appends';
import { type CommandResult, handleCommand, type WriteDeps } from './handle-command';

/**
 * One document processing command through the command handler: the document's stream read, the processing
 * decider's decision appended at the revision read, re-decided after a concurrent write. `command` is built per
 * attempt from the state read (a reaction's async inputs, e.g. how many extractions were started); `also`
 * adds appends to a decision that has events (the charge of a file ingest).
 */
export async function processDocument(
  deps: WriteDeps,
  o: {
    documentId: string;
    command: (state: DocumentState) => DocumentProcessingCommand | Promise<DocumentProcessingCommand>;
    metadata: (state: DocumentState) => EventMetadata;
    also?: (metadata: EventMetadata, state: DocumentState) => DomainAppend[];
  },
): Promise<CommandResult<DocumentState, DocumentProcessingCommand, never>> {
  return handleCommand<DocumentState, DocumentProcessingCommand, never>(deps, {
    streamId: streams.document(o.documentId),
    aggregate: documentProcessingDecider,
    metadata: o.metadata,
    prepare: (state) => Promise.resolve(o.command(state)),
    decide: (state, cmd) => {
      const events = documentProcessingDecider.decide(cmd, state);
      return { events, also: events.length && o.also ? o.also(o.metadata(state), state) : [] };
    },
  });
}
