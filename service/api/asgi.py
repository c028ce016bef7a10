"""ASGI entry for multi-worker uvicorn: settings from the environment (each worker process
imports this, so the server edge's head limits are set here too)."""

from service.api.app import create_app
from service.api.server import configure
from service.settings import Settings

settings = Settings()
configure(settings)
app = create_app(settings)
