export declare const FAKE_BOT_USERNAME: string;
export declare function startFakeTelegram(token: string): Promise<{ url: string; close: () => Promise<void> }>;
