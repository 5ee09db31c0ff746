import type { CopyRows } from './copy.js';

export type CopyResult = { command: 'COPY'; rowCount: number; rows: never[] };
type CopyConnection = { query(text: string): void; sendCopyFromChunk(chunk: Buffer): void; endCopyFrom(): void };

/**
 * `COPY … FROM STDIN` as a query of pg's own interface (what pg.Client.query takes besides text):
 * send the statement, then the rows when the server asks for them.
 */
export class CopyFromStdin {
  callback?: (error: Error | null, result?: CopyResult) => void;
  private readonly result: CopyResult = { command: 'COPY', rowCount: 0, rows: [] };

  constructor(
    private readonly text: string,
    private readonly rows: CopyRows,
  ) {}

  submit(connection: CopyConnection) {
    connection.query(this.text);
  }

  handleCopyInResponse(connection: CopyConnection) {
    connection.sendCopyFromChunk(Buffer.from(this.rows.text));
    connection.endCopyFrom();
  }

  handleCommandComplete(message: { text: string }) {
    this.result.rowCount = Number(message.text.split(' ')[1]);
  }

  // After an error pg hands the ReadyForQuery that follows to no query, so this is the last word.
  handleError(error: Error) {
    this.callback?.(error);
  }

  handleReadyForQuery() {
    this.callback?.(null, this.result);
  }

  handleRowDescription() {}
  handleDataRow() {}
  handleEmptyQuery() {}
  handlePortalSuspended() {}
  handleCopyData() {}
}
