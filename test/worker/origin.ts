/** The origin workerd tests serve the Worker at (its own module, so Node-side tests can use the authenticator too). */
export const ORIGIN = "https://tapgate.test";
