/** What a start refused for a taken port says: the service's words, redis-server's and postgres'. */
const portTaken = /is already in use|Address already in use|could not bind/i;

/**
 * Runs `start` (which picks a free port and starts a process on it) again when it failed
 * because the port was taken: a free port is free when asked, not when the child binds it,
 * and a test file running beside this one may take it in between. A start refused for its
 * port has done nothing yet, so starting again on another is safe. Any other failure, or
 * a third taken port, is thrown.
 */
export async function retryOnTakenPort<T>(start: () => Promise<T>, tries = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      if (attempt >= tries || !portTaken.test(String((error as Error)?.message ?? error))) throw error;
    }
  }
}
