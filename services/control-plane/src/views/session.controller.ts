import { Controller, Delete, Get, Header, HttpCode, Post, Req, Res } from '@nestjs/common';
import { PublicRoute, RequireScope, TOKEN_COOKIE } from '@rstar/nest-runtime';

/** The parts of express's request and response the session routes use. */
interface SessionReq {
  headers: Record<string, string | string[] | undefined>;
  secure?: boolean;
}
interface SessionRes {
  setHeader(name: string, value: string): unknown;
}

/** The sign-in page: a token typed in is sent once in the Authorization header, never in a URL. */
const LOGIN_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>rstar: sign in</title></head>
<body style="font-family: sans-serif; max-width: 30rem; margin: 4rem auto">
<h1>rstar dashboard</h1>
<form id="f"><label>API token with scope "read"<br><input id="t" type="password" size="60" autocomplete="off" required></label>
<p><button>Sign in</button> <span id="e" style="color: #b00"></span></p></form>
<script>
document.getElementById('f').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const r = await fetch('/v1/session', { method: 'POST', headers: { authorization: 'Bearer ' + document.getElementById('t').value } });
  if (r.ok) location.href = '/ui/';
  else document.getElementById('e').textContent = r.status === 401 ? 'unknown token' : r.status === 403 ? 'this token lacks the read scope' : 'error ' + r.status;
});
</script></body></html>
`;

/**
 * How the dashboard gets its cookie (a browser's EventSource cannot send an Authorization header):
 * `GET /login` is a sign-in page; `POST /v1/session` with `Authorization: Bearer <read token>` answers with
 * the token as an HttpOnly, SameSite=Strict cookie ({@link TOKEN_COOKIE}), which the services accept on GET
 * routes only; `DELETE /v1/session` clears it. The token travels in a header, so no other site can make
 * a browser obtain a session (a cross-site form cannot set headers).
 */
@Controller()
export class SessionController {
  @Get('login')
  @PublicRoute()
  @Header('content-type', 'text/html; charset=utf-8')
  @Header('cache-control', 'no-store')
  login(): string {
    return LOGIN_PAGE;
  }

  @Post('v1/session')
  @RequireScope('read')
  @HttpCode(204)
  open(@Req() req: SessionReq, @Res({ passthrough: true }) res: SessionRes): void {
    const auth = req.headers.authorization;
    const token = (Array.isArray(auth) ? auth[0] : (auth ?? '')).replace(/^Bearer\s+/i, '');
    res.setHeader('Set-Cookie', `${TOKEN_COOKIE}=${encodeURIComponent(token)}; Path=/; HttpOnly; SameSite=Strict${req.secure ? '; Secure' : ''}`);
  }

  @Delete('v1/session')
  @RequireScope('read')
  @HttpCode(204)
  close(@Res({ passthrough: true }) res: SessionRes): void {
    res.setHeader('Set-Cookie', `${TOKEN_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`);
  }
}
