import net from 'node:net';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import { parseMail, type ParsedMail } from './mime';

export interface ReceivedEmail extends ParsedMail {
  rcptTo: string[];
  at: number;
}

export interface SmtpBehaviour {
  /** Return an Error with `responseCode` to refuse the recipient (4xx/5xx). */
  onRcpt?: (address: string, session: SMTPServerSession) => (Error & { responseCode?: number }) | undefined;
  /** Called once the whole message is in, before the reply; may delay or refuse it. */
  onMessage?: (
    mail: ReceivedEmail,
  ) => Promise<(Error & { responseCode?: number }) | undefined> | (Error & { responseCode?: number }) | undefined;
}

export function smtpError(responseCode: number, message: string): Error & { responseCode: number } {
  return Object.assign(new Error(message), { responseCode });
}

/**
 * A real SMTP server the test controls (smtp-server), behind a TCP front door the test can take
 * down. `received` holds every message whose DATA the server read completely, whether or not the
 * client lived to see the reply: what a real provider would have queued.
 */
export class TestSmtp {
  readonly received: ReceivedEmail[] = [];
  /** TCP connections that reached the front door (probes and sends alike). */
  connections = 0;
  behaviour: SmtpBehaviour = {};
  private server: SMTPServer;
  private front: net.Server;
  private frontSockets = new Set<net.Socket>();
  private backendPort = 0;
  private mode: 'up' | 'reset' = 'up';
  port = 0;

  constructor() {
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      closeTimeout: 100,
      onRcptTo: (address, session, callback) =>
        callback(this.behaviour.onRcpt?.(address.address, session) ?? undefined),
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', async () => {
          const mail: ReceivedEmail = {
            ...parseMail(Buffer.concat(chunks).toString('utf8')),
            rcptTo: session.envelope.rcptTo.map((r) => r.address),
            at: Date.now(),
          };
          this.received.push(mail);
          try {
            const err = await this.behaviour.onMessage?.(mail);
            callback(err ?? null);
          } catch (e) {
            callback(e as Error);
          }
        });
      },
    });
    this.front = net.createServer((socket) => this.onFrontConnection(socket));
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.backendPort = (this.server.server.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => this.front.listen(0, '127.0.0.1', resolve));
    this.port = (this.front.address() as net.AddressInfo).port;
    return this;
  }

  /** Provider down: every open connection is cut and new ones are accepted and reset at once. */
  goDown(): void {
    this.mode = 'reset';
    for (const s of this.frontSockets) s.destroy();
  }

  /**
   * New connections are reset at once, but sessions already open carry on (a provider whose front
   * door fails while some of its servers still hold a conversation): a send stuck in one of them
   * ends by its own socket timeout, not by a cut.
   */
  refuseNewConnections(): void {
    this.mode = 'reset';
  }

  goUp(): void {
    this.mode = 'up';
  }

  messageIds(): string[] {
    return this.received.map((m) => m.messageId);
  }

  async close(): Promise<void> {
    for (const s of this.frontSockets) s.destroy();
    await new Promise<void>((resolve) => this.front.close(() => resolve()));
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private onFrontConnection(socket: net.Socket): void {
    this.connections += 1;
    if (this.mode === 'reset') {
      socket.destroy();
      return;
    }
    const upstream = net.connect(this.backendPort, '127.0.0.1');
    this.frontSockets.add(socket);
    const cleanup = () => {
      this.frontSockets.delete(socket);
      socket.destroy();
      upstream.destroy();
    };
    socket.on('error', cleanup).on('close', cleanup);
    upstream.on('error', cleanup).on('close', cleanup);
    socket.pipe(upstream).pipe(socket);
  }
}
