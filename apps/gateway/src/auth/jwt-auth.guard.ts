import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { Authenticator } from './authenticator.js';
import type { Principal } from './principal.js';

/**
 * 401 `Unauthorized` unless the request carries a valid access token.
 *
 * Not `AuthGuard('jwt')`: that looks the strategy up by name in passport's registry, which is global
 * to the process, so a second gateway in the same process (integration tests, replicas) would verify
 * with the last one's keys and identity database. This guard uses its own application's strategy,
 * through `Authenticator`, which a request with a body has already passed before its body was read.
 */
@Injectable()
export class JwtAuthGuard implements CanActivate {
  constructor(private readonly authenticator: Authenticator) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<{ user?: Principal; headers: Record<string, string | string[] | undefined> }>();
    await this.authenticator.authenticate(request, http.getResponse());
    return true;
  }
}
