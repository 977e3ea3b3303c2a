/**
 * What the page and its service worker share: the page stores this device here, because a
 * service worker cannot read localStorage. No DOM and no service-worker types in this file.
 */
export const META_CACHE = "tapgate-meta";
export const META_KEY = "/__tapgate/device";

/** This browser as a push device, once it has one. */
export interface ThisDevice {
  id: string;
  name: string;
}
