/** The largest image file an upload may carry (API.md: 10 MiB), for the gateway and the CLI alike. */
export const MAX_FILE_BYTES = 10 * 1024 * 1024;
