FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY service ./service
COPY migrations ./migrations
COPY data ./data
RUN pip install --no-cache-dir -e .
ENV GPU_ADVISOR_DATABASE_URL=sqlite:////app/var/gpu-advisor.db
EXPOSE 8000
# migrate (and upsert the catalog) then serve: the SQLite file above starts empty. With a
# database migrated by a separate step (docker-compose's `migrate` service), pass --no-migrate.
CMD ["gpu-advisor", "serve", "--host", "0.0.0.0", "--port", "8000"]
