/**
 * The SMTP providers a process can send through: `primary` (SMTP_URL) and, when SMTP_FALLBACK_URL
 * is set, `fallback`. The same words are in the ledger (`email_deliveries.provider`,
 * `attempt_provider`, `pinned_provider`: the `email_provider` enum) and in the metrics' `provider`
 * label, so a row and a series name the same provider the same way.
 */
export type ProviderName = 'primary' | 'fallback';

export const PROVIDER_NAMES: readonly ProviderName[] = ['primary', 'fallback'];
