/** The largest JSON request body (API.md: 1 MiB; 413 past it). */
export const JSON_LIMIT_BYTES = 1024 * 1024;
