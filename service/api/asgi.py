"""ASGI entry for multi-worker uvicorn: settings from the environment."""

from service.api.app import create_app

app = create_app()
