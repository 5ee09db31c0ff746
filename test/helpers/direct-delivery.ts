/**
 * Direct delivery (SMTP_URL=direct) in a test: RFC 5321's timeouts at 1/500 (a reply 600 ms, the
 * end of DATA 1.2 s), a pause of 400 ms for a destination that asks to slow down, quick retries and
 * polls. Add DNS_SERVERS and DIRECT_MX_PORT for the loopback DNS server and receivers.
 */
export const DIRECT_TEST_SETTINGS = {
  SMTP_URL: 'direct',
  EHLO_NAME: 'out.mailroom.test',
  DIRECT_TIMEOUT_SCALE: '0.002',
  DIRECT_BACKOFF_MS: '400',
  SEND_RETRY_BASE_MS: '200',
  DISPATCH_POLL_MS: '50',
};
