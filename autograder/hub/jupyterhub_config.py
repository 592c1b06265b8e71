"""JupyterHub's configuration for the trial hub (``make hub``).

``autograder/hub/run.py`` starts ``jupyterhub -f`` this file with ``COURSE_HUB_SETTINGS`` naming
the trial's settings (state/settings.json, root's alone: it holds the passwords).
"""

import json
import os
from pathlib import Path

S = json.loads(Path(os.environ["COURSE_HUB_SETTINGS"]).read_text(encoding="utf-8"))
STATE = Path(S["state"])

c = get_config()  # noqa: F821  (provided by traitlets when JupyterHub loads this file)

# Where to log in (the proxy), JupyterHub's own API and the proxy's API: all on loopback.
c.JupyterHub.bind_url = S["url"]
c.JupyterHub.hub_bind_url = S["hub_api"]
c.ConfigurableHTTPProxy.api_url = S["proxy_api"]
c.ConfigurableHTTPProxy.command = [S["proxy"]]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")
c.JupyterHub.db_url = "sqlite:///" + str(STATE / "jupyterhub.sqlite")
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True
c.JupyterHub.cleanup_proxy = True

# A trial's authenticator: one password for the students, another (32+ characters) for the
# instructor, who is the hub's admin. Anyone with the students' password can log in as any
# student: a real deployment uses PAM, OAuth or LTI (README: A real hub).
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = S["passwords"]["student"]
c.SharedPasswordAuthenticator.admin_password = S["passwords"]["instructor"]
c.Authenticator.admin_users = {S["instructor"]}
c.Authenticator.allowed_users = {S["instructor"], *S["students"]}

# Each user's server runs as that Unix user, in their home, in the hub's copy of the course's
# environment (autograder/hub/env.py); nothing of the hub's own environment is passed on.
c.JupyterHub.spawner_class = "jupyterhub.spawner.LocalProcessSpawner"
c.Spawner.cmd = [S["python"], "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.env_keep = ["LANG", "LC_ALL", "TZ"]
c.Spawner.environment = S["environment"]["common"]
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180


def per_role(spawner):
    """The role's Jupyter configuration folder (and, for the instructor, the grading folder)."""
    role = "instructor" if spawner.user.name == S["instructor"] else "student"
    spawner.environment = {**spawner.environment, **S["environment"][role]}


c.Spawner.pre_spawn_hook = per_role
