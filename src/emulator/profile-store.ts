import { newId } from "./new-id.js";

/** Token exchange profiles: only their ids matter to the one operation (docs/tenant.md#token-exchange-profiles). */
export interface ProfileStore {
  create(): string;
  /** False when the id was already gone; the API answers 204 either way (docs/tenant.md#token-exchange-profiles). */
  delete(id: string): boolean;
  ids(): string[];
}

export function createProfileStore(seed = 3): ProfileStore {
  const ids = new Set(Array.from({ length: seed }, () => newId("tep_")));
  return {
    create() {
      const id = newId("tep_");
      ids.add(id);
      return id;
    },
    delete: (id) => ids.delete(id),
    ids: () => [...ids],
  };
}
