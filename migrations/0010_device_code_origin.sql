-- Where a device code was asked for, as the approver sees it: the requesting address's /24
-- (IPv4) or /48 (IPv6) and Cloudflare's country guess, never the full address. NULL when the
-- request carried no usable address or country.
ALTER TABLE device_codes ADD COLUMN client_network TEXT;
ALTER TABLE device_codes ADD COLUMN client_country TEXT;
