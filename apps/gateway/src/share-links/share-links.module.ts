import { Module } from '@nestjs/common';
import { AccountAccessGuard } from '../accounts/account-access.guard.js';
import { AuthModule } from '../auth/auth.module.js';
import { PublicTrackingController } from './public-tracking.controller.js';
import { ShareLinksController } from './share-links.controller.js';

/** Share links (docs/share-links.md): the account routes and the public view; the page is `registerTrackingPage`'s. */
@Module({
  imports: [AuthModule],
  controllers: [ShareLinksController, PublicTrackingController],
  providers: [AccountAccessGuard],
})
export class ShareLinksModule {}
