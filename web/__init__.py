"""The front end of both services, in one folder: not Python, files the services serve.

- `pages/<page>.html`: each page's shell, markup only, with its stylesheets
  (`<link rel="stylesheet">`) and one `<script type="module">`, its entry module; no
  inline script. services/shared/pages.py serves a shell under a CSP whose script-src is
  a nonce made per response (`'strict-dynamic'`, so the entry's imports load too).
- `js/<page>.js`: each page's entry module; `js/lib/*.js` the modules pages share (DOM
  helpers, the site's words and API calls, the board, the wording of replays (the replay
  viewer's and the dispute report's) and analyses, the report-a-player dialog, the
  settings' data).
- `css/*.css`: the stylesheets.
- `i18n/*.json`: the message catalogues, one per language.

The services serve `js/`, `css/` and `i18n/` under `GET /static/{path}` (pages.py). `FILES`
is where the files are, also when installed from a wheel (pyproject's package-data).
The scripts' lint and unit tests (`package.json`, `eslint.config.js`, `test/`) stay here
too but are never served.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["FILES"]

FILES = resources.files(__name__)
