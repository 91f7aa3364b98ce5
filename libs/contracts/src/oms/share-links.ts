import type { PageRequest } from '../paging.js';
import type { ShipmentScope } from './sets.js';

/** How long a share link lives when the request names no `expiresAt`, and the most it may live (docs/share-links.md). */
export const SHARE_LINK_DEFAULT_TTL_MS = 7 * 24 * 3600 * 1000;
export const SHARE_LINK_MAX_TTL_MS = 30 * 24 * 3600 * 1000;
/** The most points the public view's `track` carries (the DMS simplifies a longer track to it). */
export const PUBLIC_TRACK_POINTS = 500;
/** The most visits the public view lists (the newest ones). */
export const PUBLIC_VISITS = 100;

/** A share link as the API lists it: never its token, which only the answer to create carries (in `url`). */
export interface ShareLink {
  id: string;
  expiresAt: string;
  createdAt: string;
  revokedAt: string | null;
}

/** The gateway made the token and sends only its SHA-256 digest (hex): the token never travels or rests. */
export interface CreateShareLinkRequest extends ShipmentScope {
  tokenDigest: string;
  /** Epoch ms, already checked by the gateway to lie in the future and within the longest lifetime. */
  expiresAt: number;
}
export interface ListShareLinksRequest extends ShipmentScope {
  page: PageRequest;
}
export interface ShareLinkRequest extends ShipmentScope {
  linkId: string;
}

/** The public view's lookup: a token's digest, nothing else (no tenant, no account). */
export interface ResolveShareLinkRequest {
  tokenDigest: string;
}

export interface PublicPlace {
  name: string;
  location: { lat: number; lng: number };
}

/** `GET /v1/public/tracking/{token}` without its `track`, which the gateway reads from the DMS. */
export interface PublicShipmentView {
  name: string;
  status: string;
  origin: PublicPlace | null;
  destination: PublicPlace | null;
  lastPosition: { lat: number; lng: number; recordedAt: string } | null;
  eta: unknown;
  visits: { name: string; arrivedAt: string; departedAt: string | null }[];
  updatedAt: string;
}

/** What the OMS answers for a live link: the view, and the scope the gateway reads the track in (never shown). */
export interface ResolvedShareLink {
  scope: ShipmentScope;
  view: PublicShipmentView;
}
